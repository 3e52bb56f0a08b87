/// DNS over TCP/TLS framing (RFC 7766 section 8, RFC 7858 section 3.3): every message is preceded
/// by its length as a u16 big-endian. Reads may split or join frames anywhere; this collects them.
///
/// Hostile input: the decoder holds at most one partial frame, which cannot be longer than 2 +
/// 65535 bytes (`maximumHeld`), plus the read being split; the verdict does not depend on how the
/// bytes were split. A zero-length frame carries no message and is skipped.
struct DoTFrameDecoder: Sendable {
    static let maximumHeld = 2 + Int(UInt16.max)

    private var buffer: [UInt8] = []

    /// Bytes held (a partial frame), never more than `maximumHeld`.
    var heldCount: Int { buffer.count }

    /// The whole frames `bytes` completes, in order.
    mutating func append(_ bytes: [UInt8]) -> [[UInt8]] {
        buffer.append(contentsOf: bytes)
        var messages: [[UInt8]] = []
        var offset = 0
        while buffer.count - offset >= 2 {
            let length = Int(buffer[offset]) << 8 | Int(buffer[offset + 1])
            guard buffer.count - offset - 2 >= length else { break }
            if length > 0 { messages.append(Array(buffer[(offset + 2)..<(offset + 2 + length)])) }
            offset += 2 + length
        }
        if offset > 0 { buffer.removeFirst(offset) }
        return messages
    }

    /// `message` with its length prefix, as one buffer so that both go out in one write (the
    /// reference does the same; a resolver may read the prefix and message in one segment).
    static func frame(_ message: [UInt8]) throws(DnsttError) -> [UInt8] {
        guard message.count <= Int(UInt16.max) else {
            throw DnsttError(code: .queryTooLong, kind: .invalidInput, message: "a DNS message longer than 65535 bytes cannot be framed for DoT")
        }
        var framed: [UInt8] = []
        framed.reserveCapacity(2 + message.count)
        framed.append(UInt8(message.count >> 8))
        framed.append(UInt8(message.count & 0xFF))
        framed.append(contentsOf: message)
        return framed
    }
}
