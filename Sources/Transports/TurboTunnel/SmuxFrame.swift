// smux frames as xtaci/smux sends them with protocol version 2 (snowflake's and dnstt's setting). An 8-byte
// header, little-endian, then the data:
//
//     ver(1)=2 | cmd(1) | length(2) | streamID(4) | data(length)
//
//     cmd  0 SYN (open stream)   1 FIN (no more data)   2 PSH (data)   3 NOP (keepalive, stream 0)
//          4 UPD (v2 window update; data = consumed(4) | window(4), both little-endian)
//
// A header with another version is a fatal protocol error for smux, and so is an unknown command.
// Data frames carry at most MaxFrameSize (32768) bytes. Client stream IDs are odd, the first is 3.
//
// Hostile input: the 16-bit length bounds a frame (the decoder holds at most one incomplete frame,
// 65535 + 8 bytes, beyond what it was just given); a wrong version or unknown command is a typed
// error; nothing here does arithmetic on a peer's number beyond index bounds it has checked. What a
// frame means (stream ids, windows) is SmuxStreamState's business.

/// One smux frame.
public struct SmuxFrame: Hashable, Sendable {
    public struct Command: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let syn = Command(rawValue: 0)
        public static let fin = Command(rawValue: 1)
        public static let push = Command(rawValue: 2)
        public static let nop = Command(rawValue: 3)
        public static let update = Command(rawValue: 4)
        public var description: String {
            ["SYN", "FIN", "PSH", "NOP", "UPD"].indices.contains(Int(rawValue))
                ? ["SYN", "FIN", "PSH", "NOP", "UPD"][Int(rawValue)] : "cmd \(rawValue)"
        }
    }

    public static let version: UInt8 = 2
    public static let headerSize = 8
    public static let maxFrameSize = 32768

    public var command: Command
    public var streamID: UInt32
    public var payload: [UInt8]

    public init(command: Command, streamID: UInt32, payload: [UInt8] = []) {
        self.command = command
        self.streamID = streamID
        self.payload = payload
    }

    /// A v2 window update: bytes the receiver has consumed so far (mod 2³²) and its window.
    public static func update(streamID: UInt32, consumed: UInt32, window: UInt32) -> SmuxFrame {
        var payload: [UInt8] = []
        appendLE(consumed, to: &payload)
        appendLE(window, to: &payload)
        return SmuxFrame(command: .update, streamID: streamID, payload: payload)
    }

    /// consumed and window of a UPD frame; nil for other frames or a malformed payload.
    public var windowUpdate: (consumed: UInt32, window: UInt32)? {
        guard command == .update, payload.count == 8 else { return nil }
        return (readLE32(payload, 0), readLE32(payload, 4))
    }

    public var encoded: [UInt8] {
        var out: [UInt8] = [Self.version, command.rawValue]
        out.reserveCapacity(Self.headerSize + payload.count)
        appendLE(UInt16(payload.count), to: &out)
        appendLE(streamID, to: &out)
        out.append(contentsOf: payload)
        return out
    }

    /// Reassembles frames from a byte stream delivered in arbitrary pieces.
    public struct Decoder: Sendable {
        private var buffer: [UInt8] = []
        private var start = 0
        /// Names the sender in error messages.
        let peer: String

        public init(peer: String = "the peer") {
            self.peer = peer
        }

        /// Bytes held and not yet returned as frames: at most one incomplete frame (65535 + 8)
        /// plus what the last append brought.
        package var bufferedBytes: Int { buffer.count - start }

        // Concrete overloads rather than `some Collection<UInt8>`: across a module boundary the
        // generic one is not specialised and costs the fuzzers about 30 % (commit 2f6715e).
        public mutating func append(_ bytes: ArraySlice<UInt8>) {
            compact()
            buffer.append(contentsOf: bytes)
        }

        public mutating func append(_ bytes: [UInt8]) {
            compact()
            buffer.append(contentsOf: bytes)
        }

        private mutating func compact() {
            if start > 0 && start >= buffer.count / 2 {
                buffer.removeFirst(start)
                start = 0
            }
        }

        /// The next complete frame; nil when more bytes are needed.
        public mutating func nextFrame() throws(TurboTunnelError) -> SmuxFrame? {
            guard buffer.count - start >= SmuxFrame.headerSize else { return nil }
            let version = buffer[start]
            guard version == SmuxFrame.version else {
                throw TurboTunnelError(code: .smuxWrongVersion, kind: .protocolViolation,
                                       message: "\(peer) sent an smux frame of version \(version), expected 2")
            }
            let command = buffer[start + 1]
            guard command <= 4 else {
                throw TurboTunnelError(code: .smuxMalformed, kind: .protocolViolation,
                                       message: "\(peer) sent an smux frame with the unknown command \(command)")
            }
            let length = Int(readLE16(buffer, start + 2))
            let streamID = readLE32(buffer, start + 4)
            let dataStart = start + SmuxFrame.headerSize
            guard buffer.count - dataStart >= length else { return nil }
            start = dataStart + length
            return SmuxFrame(command: Command(rawValue: command), streamID: streamID,
                             payload: Array(buffer[dataStart..<(dataStart + length)]))
        }
    }
}
