// KCP wire format as kcp-go v5 sends it for snowflake and dnstt: no FEC header and no encryption, so
// a packet is one or more bare KCP segments back to back. Every field is little-endian.
//
//     conv(4) cmd(1) frg(1) wnd(2) ts(4) sn(4) una(4) len(4) data(len)
//
//     cmd  81 PUSH (data)   82 ACK   83 WASK (window probe)   84 WINS (window size)
//     frg  fragment countdown; always 0 in stream mode (snowflake's and dnstt's setting)
//     wnd  receiver's free window, in segments
//     ts   sender's clock in ms (ACK: the ts of the acknowledged segment)
//     sn   sequence number (ACK: the acknowledged sn)
//     una  every sn below this has been received
//
// A packet never exceeds the MTU (snowflake: 1400 bytes, so a single segment carries at most 1376 data
// bytes; dnstt: smaller, and different in each direction). kcp-go rejects a packet whose segments name another conv or an unknown cmd, and stops
// at a tail shorter than a header; the decoder below does the same.
//
// Hostile input: `len` is checked against the bytes present before any slice (a 32-bit length in a
// 64-bit Int cannot overflow the sum); numbers are only decoded here. What they mean (windows,
// wrapping sequence arithmetic, RTT) is checked in KCPControlBlock.swift.

/// One KCP segment.
public struct KCPSegment: Hashable, Sendable {
    public struct Command: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let push = Command(rawValue: 81)
        public static let ack = Command(rawValue: 82)
        public static let windowProbe = Command(rawValue: 83)
        public static let windowTell = Command(rawValue: 84)
        static let known: Set<UInt8> = [81, 82, 83, 84]
        public var description: String {
            switch rawValue {
            case 81: "PUSH"
            case 82: "ACK"
            case 83: "WASK"
            case 84: "WINS"
            default: "cmd \(rawValue)"
            }
        }
    }

    public static let headerSize = 24
    /// kcp-go's default MTU (IKCP_MTU_DEF), snowflake's.
    public static let mtu = 1400

    public var conversation: UInt32
    public var command: Command
    public var fragment: UInt8
    public var window: UInt16
    public var timestamp: UInt32
    public var sequenceNumber: UInt32
    public var unacknowledged: UInt32
    public var payload: [UInt8]

    public init(conversation: UInt32, command: Command, fragment: UInt8 = 0, window: UInt16,
                timestamp: UInt32, sequenceNumber: UInt32, unacknowledged: UInt32, payload: [UInt8] = []) {
        self.conversation = conversation
        self.command = command
        self.fragment = fragment
        self.window = window
        self.timestamp = timestamp
        self.sequenceNumber = sequenceNumber
        self.unacknowledged = unacknowledged
        self.payload = payload
    }

    public var encodedSize: Int { Self.headerSize + payload.count }

    public func encode(into out: inout [UInt8]) {
        appendLE(conversation, to: &out)
        out.append(command.rawValue)
        out.append(fragment)
        appendLE(window, to: &out)
        appendLE(timestamp, to: &out)
        appendLE(sequenceNumber, to: &out)
        appendLE(unacknowledged, to: &out)
        appendLE(UInt32(payload.count), to: &out)
        out.append(contentsOf: payload)
    }

    public var encoded: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(encodedSize)
        encode(into: &out)
        return out
    }

    /// All segments of one packet. `conversation` nil accepts the first segment's conv (a server
    /// learning a new session); otherwise every segment must carry it. `peer` names the sender in
    /// error messages ("the snowflake proxy or server").
    public static func decodePacket(_ packet: [UInt8], conversation: UInt32? = nil,
                                    peer: String = "the peer") throws(TurboTunnelError) -> [KCPSegment] {
        var segments: [KCPSegment] = []
        var index = 0
        var expected = conversation
        while packet.count - index >= headerSize {
            let conv = readLE32(packet, index)
            if let expected, expected != conv {
                throw TurboTunnelError(code: .kcpWrongConversation, kind: .protocolViolation,
                                       message: "\(peer) sent a KCP segment of another conversation")
            }
            expected = conv
            let command = packet[index + 4]
            guard Command.known.contains(command) else {
                throw TurboTunnelError(code: .kcpMalformed, kind: .protocolViolation,
                                       message: "\(peer) sent a KCP segment with the unknown command \(command)")
            }
            let length = Int(readLE32(packet, index + 20))
            let dataStart = index + headerSize
            guard packet.count - dataStart >= length else {
                throw TurboTunnelError(code: .kcpMalformed, kind: .protocolViolation,
                                       message: "\(peer) sent a KCP segment claiming \(length) data bytes in a packet with \(packet.count - dataStart)")
            }
            segments.append(KCPSegment(
                conversation: conv, command: Command(rawValue: command), fragment: packet[index + 5],
                window: UInt16(packet[index + 6]) | UInt16(packet[index + 7]) << 8,
                timestamp: readLE32(packet, index + 8), sequenceNumber: readLE32(packet, index + 12),
                unacknowledged: readLE32(packet, index + 16),
                payload: Array(packet[dataStart..<(dataStart + length)])))
            index = dataStart + length
        }
        return segments
    }
}

func appendLE(_ value: UInt32, to out: inout [UInt8]) {
    out.append(UInt8(truncatingIfNeeded: value))
    out.append(UInt8(truncatingIfNeeded: value >> 8))
    out.append(UInt8(truncatingIfNeeded: value >> 16))
    out.append(UInt8(truncatingIfNeeded: value >> 24))
}

func appendLE(_ value: UInt16, to out: inout [UInt8]) {
    out.append(UInt8(truncatingIfNeeded: value))
    out.append(UInt8(truncatingIfNeeded: value >> 8))
}

func readLE32(_ bytes: [UInt8], _ index: Int) -> UInt32 {
    UInt32(bytes[index]) | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2]) << 16 | UInt32(bytes[index + 3]) << 24
}

func readLE16(_ bytes: [UInt8], _ index: Int) -> UInt16 {
    UInt16(bytes[index]) | UInt16(bytes[index + 1]) << 8
}
