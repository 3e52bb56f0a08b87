/// Reassembles dnstt's Noise messages (`length(2, big-endian) | message`) from the KCP byte stream,
/// delivered in arbitrary pieces.
///
/// Hostile input: the 16-bit length bounds a message, so the decoder holds at most one incomplete
/// frame (65535 + 2 bytes) beyond what the last append brought; a length below 16 (shorter than a
/// ChaCha20-Poly1305 tag, so no Noise message at all) is a typed error that ends the stream.
public struct NoiseFrameDecoder: Sendable {
    /// The shortest Noise message: an empty plaintext's tag.
    public static let minimumMessageLength = 16
    /// A frame's length prefix.
    public static let prefixLength = 2

    private var buffer: [UInt8] = []
    private var start = 0

    public init() {}

    /// Bytes held and not yet returned as messages.
    public var bufferedBytes: Int { buffer.count - start }

    public mutating func append(_ bytes: [UInt8]) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    public mutating func append(_ bytes: ArraySlice<UInt8>) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    private mutating func compact() {
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
    }

    /// The next complete message; nil when more bytes are needed.
    public mutating func nextMessage() throws(DnsttError) -> [UInt8]? {
        guard buffer.count - start >= Self.prefixLength else { return nil }
        let length = Int(buffer[start]) << 8 | Int(buffer[start + 1])
        guard length >= Self.minimumMessageLength else {
            throw DnsttError(code: .noiseFrameMalformed, kind: .protocolViolation,
                             message: "the dnstt server sent a Noise message of \(length) bytes, shorter than its 16-byte tag")
        }
        let messageStart = start + Self.prefixLength
        guard buffer.count - messageStart >= length else { return nil }
        start = messageStart + length
        return Array(buffer[messageStart..<start])
    }
}
