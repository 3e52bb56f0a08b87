// A DNS message (RFC 1035 §4.1): the 12-byte header, then questions, answers, authority and
// additional records. dnstt reads the responses a recursive resolver sends back, so every byte of
// them is hostile.
//
// Decoder caps (docs/SECURITY.md): a message is at most 65535 bytes (the largest a DoT frame or
// TCP message can carry; UDP reads are smaller); a name is at most 255 octets and a label 63; a
// compression pointer must point strictly before the position where the part of the name it
// continues began, so every jump goes backwards and a loop cannot be built; the section counts are
// never used to reserve memory (each record consumes at least 5 bytes that are present, so 65535
// bytes hold at most 13107 of them); an RDLENGTH must fit in what is left; no byte may follow the
// last record. Label types 01 and 10 (RFC 6891's extended labels, never deployed) are refused.

/// A parsed DNS message.
public struct DnsMessage: Hashable, Sendable {
    public static let maximumSize = 65535
    static let headerSize = 12

    public var id: UInt16
    public var flags: UInt16
    public var questions: [DnsQuestion]
    public var answers: [DnsResourceRecord]
    public var authorities: [DnsResourceRecord]
    public var additionals: [DnsResourceRecord]

    public init(id: UInt16, flags: UInt16, questions: [DnsQuestion] = [], answers: [DnsResourceRecord] = [],
                authorities: [DnsResourceRecord] = [], additionals: [DnsResourceRecord] = []) {
        self.id = id
        self.flags = flags
        self.questions = questions
        self.answers = answers
        self.authorities = authorities
        self.additionals = additionals
    }

    /// QR: the message is a response.
    public var isResponse: Bool { flags & 0x8000 != 0 }
    /// The low four bits of the RCODE (the header's; EDNS's extended bits are not combined).
    public var responseCode: UInt8 { UInt8(flags & 0x000F) }

    /// The uncompressed wire form. Section counts and RDLENGTHs are clamped to 16 bits (a message
    /// built here never comes near that).
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        Self.appendBE(id, to: &out)
        Self.appendBE(flags, to: &out)
        for count in [questions.count, answers.count, authorities.count, additionals.count] {
            Self.appendBE(UInt16(clamping: count), to: &out)
        }
        for question in questions { question.encode(into: &out) }
        for record in answers + authorities + additionals { record.encode(into: &out) }
        return out
    }

    /// Parses `bytes` as one whole message (see the caps above).
    public init(decoding bytes: [UInt8]) throws(DnsttError) {
        guard bytes.count <= Self.maximumSize else {
            throw Self.malformed("a DNS message longer than 65535 bytes")
        }
        guard bytes.count >= Self.headerSize else {
            throw Self.malformed("a DNS message shorter than its 12-byte header")
        }
        var reader = Reader(bytes: bytes, index: Self.headerSize)
        id = reader.u16(at: 0)
        flags = reader.u16(at: 2)
        let counts = (reader.u16(at: 4), reader.u16(at: 6), reader.u16(at: 8), reader.u16(at: 10))
        questions = []
        for _ in 0..<counts.0 {
            let name = try reader.name()
            questions.append(DnsQuestion(name: name, type: try reader.u16(), class: try reader.u16()))
        }
        answers = try reader.records(Int(counts.1))
        authorities = try reader.records(Int(counts.2))
        additionals = try reader.records(Int(counts.3))
        guard reader.index == bytes.count else {
            throw Self.malformed("\(bytes.count - reader.index) bytes follow the last record of a DNS message")
        }
    }

    static func malformed(_ message: String) -> DnsttError {
        DnsttError(code: .dnsMalformed, kind: .protocolViolation, message: message)
    }

    static func appendBE(_ value: UInt16, to out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: value >> 8))
        out.append(UInt8(truncatingIfNeeded: value))
    }

    /// A cursor over the message; every read checks the bytes are present first.
    private struct Reader {
        let bytes: [UInt8]
        var index: Int

        func u16(at offset: Int) -> UInt16 { UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1]) }

        mutating func u16() throws(DnsttError) -> UInt16 {
            guard bytes.count - index >= 2 else { throw DnsMessage.malformed("a DNS message ends inside a record") }
            defer { index += 2 }
            return u16(at: index)
        }

        mutating func u32() throws(DnsttError) -> UInt32 {
            let high = try u16()
            return UInt32(high) << 16 | UInt32(try u16())
        }

        mutating func records(_ count: Int) throws(DnsttError) -> [DnsResourceRecord] {
            var records: [DnsResourceRecord] = []
            for _ in 0..<count {
                let name = try name()
                let type = try u16()
                let recordClass = try u16()
                let ttl = try u32()
                let length = Int(try u16())
                guard bytes.count - index >= length else {
                    throw DnsMessage.malformed("a DNS record's RDLENGTH \(length) goes past the end of the message")
                }
                records.append(DnsResourceRecord(name: name, type: type, class: recordClass, ttl: ttl,
                                                 data: Array(bytes[index..<(index + length)])))
                index += length
            }
            return records
        }

        /// A possibly compressed name at `index`; `index` ends after its first pointer or its root.
        mutating func name() throws(DnsttError) -> DnsName {
            var labels: [[UInt8]] = []
            var wireLength = 1
            var position = index
            // Where the part of the name being read began: a pointer must go strictly before it.
            var partStart = index
            var resumeAt: Int?
            while true {
                guard position < bytes.count else { throw DnsMessage.malformed("a DNS message ends inside a name") }
                let length = bytes[position]
                switch length & 0xC0 {
                case 0x00:
                    if length == 0 {
                        index = resumeAt ?? position + 1
                        // The wire length was checked label by label, so the labels are valid.
                        guard let name = DnsName(labels: labels) else { throw DnsMessage.malformed("a DNS name over the limits") }
                        return name
                    }
                    let count = Int(length)
                    guard bytes.count - position - 1 >= count else { throw DnsMessage.malformed("a DNS label goes past the end of the message") }
                    wireLength += count + 1
                    guard wireLength <= DnsName.maximumWireLength else { throw DnsMessage.malformed("a DNS name longer than 255 octets") }
                    labels.append(Array(bytes[(position + 1)..<(position + 1 + count)]))
                    position += 1 + count
                case 0xC0:
                    guard bytes.count - position >= 2 else { throw DnsMessage.malformed("a DNS message ends inside a compression pointer") }
                    let target = Int(length & 0x3F) << 8 | Int(bytes[position + 1])
                    guard target < partStart else {
                        throw DnsMessage.malformed("a DNS compression pointer that does not point backwards")
                    }
                    if resumeAt == nil { resumeAt = position + 2 }
                    position = target
                    partStart = target
                default:
                    throw DnsMessage.malformed("a DNS label of the reserved type \(length >> 6)")
                }
            }
        }
    }
}
