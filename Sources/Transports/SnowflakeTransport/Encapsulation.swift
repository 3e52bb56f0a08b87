// Turbo Tunnel framing of snowflake (common/turbotunnel and common/encapsulation upstream).
//
// Every new carrier (DataChannel, or WebSocket on the server side) starts with
//
//     12 93 60 5d 27 81 75 f5      the Turbo Tunnel token
//     <ClientID, 8 bytes>          random per session, the same across redials
//
// followed, in both directions, by a stream of chunks. Each chunk is a length prefix and that many
// bytes:
//
//     first byte   d c x x x x x x    d = 1 data / 0 padding; c = another length byte follows
//     next bytes   c y y y y y y y    at most two of them: a prefix is 1 to 3 bytes
//     length       the value bits concatenated, most significant first (max 0xFFFFF)
//
// Writers use the shortest prefix; readers accept any (non-minimal encodings are valid) and skip
// padding. Every data chunk is exactly one KCP packet. The server truncates data chunks to the
// 1400-byte KCP MTU, so a client must never send a longer packet.
//
// Hostile input: a prefix longer than 3 bytes is a typed error; a length is at most 20 bits, so the
// decoder holds at most one incomplete chunk (1 MiB) beyond what it was just given; data chunks are
// truncated to maxPacketSize, as upstream. No sum here can overflow.

import TurboTunnel

/// The constants of a Turbo Tunnel session.
public enum TurboTunnel {
    /// The magic prefix that opts a carrier into Turbo Tunnel mode.
    public static let token: [UInt8] = [0x12, 0x93, 0x60, 0x5d, 0x27, 0x81, 0x75, 0xf5]
    /// Largest packet the server accepts unchanged (kcp-go's MTU).
    public static let maxPacketSize = 1400
}

extension ClientID {
    /// The bytes a client writes at the start of every carrier: token, then ClientID.
    public var carrierPreamble: [UInt8] { TurboTunnel.token + bytes }
}

/// Encoder and streaming decoder of encapsulation chunks.
public enum Encapsulation {
    /// Largest length a 3-byte prefix can carry.
    public static let maxChunkLength = (1 << 20) - 1

    /// The shortest data prefix for `length` (as upstream's writer chooses it).
    public static func dataPrefix(length: Int) throws(SnowflakeError) -> [UInt8] {
        switch length {
        case 0..<(1 << 6):
            return [0x80 | UInt8(length)]
        case (1 << 6)..<(1 << 13):
            return [0xc0 | UInt8(length >> 7), UInt8(length & 0x7f)]
        case (1 << 13)...maxChunkLength:
            return [0xc0 | UInt8(length >> 14), 0x80 | UInt8((length >> 7) & 0x7f), UInt8(length & 0x7f)]
        default:
            throw SnowflakeError(code: .encapsulationTooLong, kind: .invalidInput,
                                 message: "a data chunk of \(length) bytes does not fit a 3-byte length prefix")
        }
    }

    /// One data chunk: prefix and payload.
    public static func encodeData(_ payload: [UInt8]) throws(SnowflakeError) -> [UInt8] {
        try dataPrefix(length: payload.count) + payload
    }

    /// Padding whose total size, prefixes included, is exactly `total` bytes (zero bytes of filler),
    /// split into chunks the way upstream's writer does (at most 1024 bytes each).
    public static func encodePadding(total: Int) -> [UInt8] {
        var out: [UInt8] = []
        var remaining = max(0, total)
        while remaining > 0 {
            let chunk = min(1024, remaining)
            remaining -= chunk
            if chunk - 1 < (1 << 6) {
                out.append(UInt8(chunk - 1))
                out.append(contentsOf: [UInt8](repeating: 0, count: chunk - 1))
            } else {
                let body = chunk - 2
                out.append(0x40 | UInt8(body >> 7))
                out.append(UInt8(body & 0x7f))
                out.append(contentsOf: [UInt8](repeating: 0, count: body))
            }
        }
        return out
    }

    /// Reassembles packets from a byte stream delivered in arbitrary pieces.
    public struct Decoder: Sendable {
        private var buffer: [UInt8] = []
        private var start = 0
        /// Data chunks longer than this are truncated (upstream: 1400-byte MTU on the server side;
        /// the client reads into a buffer and drops the excess).
        public let maxPacketSize: Int

        public init(maxPacketSize: Int = TurboTunnel.maxPacketSize) {
            self.maxPacketSize = maxPacketSize
        }

        public mutating func append(_ bytes: some Collection<UInt8>) {
            if start > 0 && start >= buffer.count / 2 {
                buffer.removeFirst(start)
                start = 0
            }
            buffer.append(contentsOf: bytes)
        }

        /// The next complete data chunk, skipping padding; nil when more bytes are needed.
        public mutating func nextPacket() throws(SnowflakeError) -> [UInt8]? {
            while true {
                var index = start
                guard index < buffer.count else { return nil }
                let first = buffer[index]
                index += 1
                let isData = first & 0x80 != 0
                var more = first & 0x40 != 0
                var length = Int(first & 0x3f)
                var extra = 0
                while more {
                    guard extra < 2 else {
                        throw SnowflakeError(code: .encapsulationTooLong, kind: .protocolViolation,
                                             message: "the snowflake proxy or server sent an encapsulation length prefix longer than 3 bytes")
                    }
                    guard index < buffer.count else { return nil }
                    let byte = buffer[index]
                    index += 1
                    extra += 1
                    more = byte & 0x80 != 0
                    length = (length << 7) | Int(byte & 0x7f)
                }
                guard buffer.count - index >= length else { return nil }
                start = index + length
                if isData {
                    return Array(buffer[index..<(index + min(length, maxPacketSize))])
                }
            }
        }
    }
}

func hexByte(_ byte: UInt8) -> String {
    let digits: [Character] = Array("0123456789abcdef")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]])
}
