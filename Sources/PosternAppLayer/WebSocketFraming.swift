// RFC 6455 framing, client side.
//
// Wire format of one frame (all lengths big-endian):
//   byte 0: FIN(1) RSV1-3(3, must be 0: we negotiate no extension) opcode(4)
//   byte 1: MASK(1) payload length(7): 0-125 literal; 126 → 16-bit length follows; 127 → 64-bit
//           length follows (most significant bit 0)
//   then the 4-byte masking key when MASK is set, then the payload.
// Opcodes: 0 continuation, 1 text, 2 binary, 8 close, 9 ping, 10 pong; 3-7 and 11-15 reserved.
// A client masks every frame it sends with a fresh random key; a server never masks. Control frames
// (8-10) carry at most 125 bytes, are never fragmented and may arrive between the fragments of a
// message. A close payload is empty or a 2-byte code plus UTF-8 reason.
//
// The rule for this decoder, as for every decoder of network input in Postern: no byte from the
// peer may trap, hang or grow memory without a stated cap. The 7/16/64-bit length is read into a
// UInt64 (a 64-bit length with its top bit set is a 1002 violation) and compared with the message
// cap minus what the message already holds before it is ever converted to Int or buffered, so a
// length of 2^62 costs nothing (1009); control frames are at most 125 bytes. The parser holds at
// most one message under the cap plus one read.
import PosternCrypto
import Foundation
import PosternCore
import PosternSystem

public enum WebSocketMessage: Sendable, Hashable {
    case text(String)
    case binary(Data)
}

/// A close frame's status code (RFC 6455 §7.4) and reason (the peer's text: `description` shows
/// it with its control characters made visible).
public struct WebSocketCloseStatus: Sendable, Hashable, CustomStringConvertible {
    public let code: UInt16
    public let reason: String
    public init(code: UInt16, reason: String = "") {
        self.code = code
        self.reason = reason
    }
    public static let normal: UInt16 = 1000
    public static let protocolError: UInt16 = 1002
    public static let invalidPayload: UInt16 = 1007
    public static let messageTooBig: UInt16 = 1009
    /// Never sent: reported when the connection ended without a close frame.
    public static let abnormal: UInt16 = 1006
    public var description: String { reason.isEmpty ? "\(code)" : "\(code) \(PlainText.visible(reason))" }
}

enum WebSocketOpcode: UInt8 {
    case continuation = 0, text = 1, binary = 2, close = 8, ping = 9, pong = 10
    var isControl: Bool { rawValue >= 8 }
}

enum WebSocketFrameEncoder {
    /// One masked client frame.
    static func frame(_ opcode: WebSocketOpcode, payload: some Collection<UInt8>, fin: Bool = true) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | opcode.rawValue]
        let length = payload.count
        if length < 126 {
            bytes.append(0x80 | UInt8(length))
        } else if length <= 0xFFFF {
            bytes.append(0x80 | 126)
            bytes += [UInt8(length >> 8), UInt8(length & 0xFF)]
        } else {
            bytes.append(0x80 | 127)
            bytes += (0..<8).reversed().map { UInt8((UInt64(length) >> (UInt64($0) * 8)) & 0xFF) }
        }
        var key = [UInt8](repeating: 0, count: 4)
        SecureRandom.fill(&key)
        bytes += key
        var index = 0
        bytes.reserveCapacity(bytes.count + length)
        for byte in payload {
            bytes.append(byte ^ key[index & 3])
            index += 1
        }
        return bytes
    }

    static func close(_ status: WebSocketCloseStatus) -> [UInt8] {
        var payload = [UInt8(status.code >> 8), UInt8(status.code & 0xFF)]
        payload += Array(status.reason.utf8.prefix(123))
        return frame(.close, payload: payload)
    }

    /// A data message split into frames of at most `fragmentSize` payload bytes.
    static func message(_ message: WebSocketMessage, fragmentSize: Int = Int.max) -> [UInt8] {
        let (opcode, payload): (WebSocketOpcode, [UInt8]) = switch message {
        case .text(let text): (.text, Array(text.utf8))
        case .binary(let data): (.binary, Array(data))
        }
        guard payload.count > fragmentSize, fragmentSize > 0 else { return frame(opcode, payload: payload) }
        var bytes: [UInt8] = []
        var offset = 0
        while offset < payload.count {
            let end = min(payload.count, offset + fragmentSize)
            bytes += frame(offset == 0 ? opcode : .continuation, payload: payload[offset..<end], fin: end == payload.count)
            offset = end
        }
        return bytes
    }
}

/// What the parser found in the bytes received so far.
package enum WebSocketEvent: Equatable {
    case message(WebSocketMessage)
    case ping([UInt8])
    case pong([UInt8])
    case close(WebSocketCloseStatus?)
}

/// Incremental parser for server frames, with message reassembly and the inbound size cap. Any
/// violation throws a ``WebSocketCloseStatus`` error carrying the code to close with. `package`
/// access: the `WebSocketFrameFuzzer` target (Fuzz/WebSocketFrameFuzzer) drives it too.
package struct WebSocketFrameParser {
    package struct Violation: Error, Equatable {
        package let status: WebSocketCloseStatus
    }

    let maximumMessageBytes: Int
    private var buffer: [UInt8] = []
    private var fragmentOpcode: WebSocketOpcode?
    private var fragments: [UInt8] = []

    package init(maximumMessageBytes: Int) { self.maximumMessageBytes = maximumMessageBytes }

    package mutating func feed(_ bytes: some Collection<UInt8>) throws(Violation) -> [WebSocketEvent] {
        buffer += bytes
        var events: [WebSocketEvent] = []
        var consumed = 0
        defer { buffer.removeFirst(consumed) }
        while let event = try nextFrame(consumed: &consumed) {
            if let event { events.append(event) }
        }
        return events
    }

    private static func violation(_ code: UInt16, _ reason: String) -> Violation {
        Violation(status: WebSocketCloseStatus(code: code, reason: reason))
    }

    /// nil: need more bytes. .some(nil): a frame that completes nothing yet (a fragment).
    private mutating func nextFrame(consumed: inout Int) throws(Violation) -> WebSocketEvent?? {
        let available = buffer.count - consumed
        guard available >= 2 else { return nil }
        let base = consumed
        let first = buffer[base], second = buffer[base + 1]
        let fin = first & 0x80 != 0
        guard first & 0x70 == 0 else { throw Self.violation(WebSocketCloseStatus.protocolError, "reserved bits set") }
        guard let opcode = WebSocketOpcode(rawValue: first & 0x0F) else {
            throw Self.violation(WebSocketCloseStatus.protocolError, "reserved opcode \(first & 0x0F)")
        }
        guard second & 0x80 == 0 else { throw Self.violation(WebSocketCloseStatus.protocolError, "masked frame from the server") }
        var header = 2
        var length = UInt64(second & 0x7F)
        if length == 126 {
            guard available >= 4 else { return nil }
            length = UInt64(buffer[base + 2]) << 8 | UInt64(buffer[base + 3])
            header = 4
        } else if length == 127 {
            guard available >= 10 else { return nil }
            length = (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(buffer[base + 2 + $1]) }
            guard length >> 63 == 0 else { throw Self.violation(WebSocketCloseStatus.protocolError, "64-bit length with the top bit set") }
            header = 10
        }
        if opcode.isControl {
            guard fin else { throw Self.violation(WebSocketCloseStatus.protocolError, "fragmented control frame") }
            guard length <= 125 else { throw Self.violation(WebSocketCloseStatus.protocolError, "control frame over 125 bytes") }
        } else {
            // Enforce the cap from the header, before buffering the payload.
            let soFar = opcode == .continuation ? fragments.count : 0
            guard length <= UInt64(maximumMessageBytes - soFar) else {
                throw Self.violation(WebSocketCloseStatus.messageTooBig, "message over \(maximumMessageBytes) bytes")
            }
        }
        guard UInt64(available - header) >= length else { return nil }
        let payload = Array(buffer[(base + header)..<(base + header + Int(length))])
        consumed += header + Int(length)

        switch opcode {
        case .ping: return .some(.ping(payload))
        case .pong: return .some(.pong(payload))
        case .close:
            guard !payload.isEmpty else { return .some(.close(nil)) }
            guard payload.count >= 2 else { throw Self.violation(WebSocketCloseStatus.protocolError, "1-byte close payload") }
            let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
            guard let reason = String(validating: payload[2...], as: UTF8.self) else {
                throw Self.violation(WebSocketCloseStatus.invalidPayload, "close reason is not UTF-8")
            }
            return .some(.close(WebSocketCloseStatus(code: code, reason: reason)))
        case .text, .binary:
            guard fragmentOpcode == nil else {
                throw Self.violation(WebSocketCloseStatus.protocolError, "new message inside a fragmented one")
            }
            if fin { return .some(.message(try Self.message(opcode, payload))) }
            fragmentOpcode = opcode
            fragments = payload
            return .some(nil)
        case .continuation:
            guard let started = fragmentOpcode else {
                throw Self.violation(WebSocketCloseStatus.protocolError, "continuation without a message")
            }
            fragments += payload
            guard fin else { return .some(nil) }
            let whole = fragments
            fragmentOpcode = nil
            fragments = []
            return .some(.message(try Self.message(started, whole)))
        }
    }

    private static func message(_ opcode: WebSocketOpcode, _ payload: [UInt8]) throws(Violation) -> WebSocketMessage {
        guard opcode == .text else { return .binary(Data(payload)) }
        guard let text = String(validating: payload, as: UTF8.self) else {
            throw violation(WebSocketCloseStatus.invalidPayload, "text message is not UTF-8")
        }
        return .text(text)
    }
}
