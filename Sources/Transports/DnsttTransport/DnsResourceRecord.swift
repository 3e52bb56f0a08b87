/// One resource record of a DNS message's answer, authority or additional section (RFC 1035
/// §4.1.3). `data` is the RDATA as it was on the wire: names inside it are not decompressed (dnstt
/// reads only TXT, whose RDATA has none).
public struct DnsResourceRecord: Hashable, Sendable {
    public static let typeTXT: UInt16 = 16
    public static let typeOPT: UInt16 = 41
    public static let classIN: UInt16 = 1

    public var name: DnsName
    public var type: UInt16
    public var `class`: UInt16
    public var ttl: UInt32
    public var data: [UInt8]

    public init(name: DnsName, type: UInt16, class: UInt16, ttl: UInt32, data: [UInt8]) {
        self.name = name
        self.type = type
        self.class = `class`
        self.ttl = ttl
        self.data = data
    }

    func encode(into out: inout [UInt8]) {
        name.encode(into: &out)
        DnsMessage.appendBE(type, to: &out)
        DnsMessage.appendBE(`class`, to: &out)
        DnsMessage.appendBE(UInt16(truncatingIfNeeded: ttl >> 16), to: &out)
        DnsMessage.appendBE(UInt16(truncatingIfNeeded: ttl), to: &out)
        DnsMessage.appendBE(UInt16(clamping: data.count), to: &out)
        out.append(contentsOf: data.prefix(Int(UInt16.max)))
    }
}
