/// One entry of a DNS message's question section (RFC 1035 §4.1.2).
public struct DnsQuestion: Hashable, Sendable {
    public var name: DnsName
    public var type: UInt16
    public var `class`: UInt16

    public init(name: DnsName, type: UInt16, class: UInt16) {
        self.name = name
        self.type = type
        self.class = `class`
    }

    func encode(into out: inout [UInt8]) {
        name.encode(into: &out)
        DnsMessage.appendBE(type, to: &out)
        DnsMessage.appendBE(`class`, to: &out)
    }
}
