import PosternCrypto
import Foundation
import Synchronization

// A minimal RFC 6455 WebSocket client carrying a byte stream, as the snowflake proxy does towards the
// server (and as tests use it to reach the server without WebRTC): one binary message per write,
// masked (client side); incoming binary/text messages are concatenated into the byte stream, pings
// answered with pongs, a close frame ends the stream. Fragmented messages are accepted.
//
// Hostile input: a frame is at most maxFrameLength bytes (a 64-bit length with the top bit set, or
// any length past the cap, is a typed error before any index or sum: such a length used to trap in
// `index + length`); frames are delivered as they arrive, so no message is reassembled; the
// handshake answer is at most handshakeLimit bytes and must be complete by handshakeDeadline
// (checked after every read), so a server that drips it cannot hold the dial.

public final class WebSocketByteStream: SnowflakeByteStream {
    private let transport: any SnowflakeByteStream
    private let state: Mutex<ReadState>

    private struct ReadState: Sendable {
        var buffer: [UInt8] = []
        var closed = false
    }

    /// Largest frame accepted (the snowflake server sends KCP packets of at most 1400 bytes).
    public static let maxFrameLength = 1 << 20
    /// Largest handshake answer.
    static let handshakeLimit = 16 * 1024
    /// The whole opening handshake, request to 101 answer.
    public static let handshakeDeadline: Duration = .seconds(20)

    private init(transport: any SnowflakeByteStream, leftover: [UInt8]) {
        self.transport = transport
        self.state = Mutex(ReadState(buffer: leftover))
    }

    /// Opens `url` (ws:// only; wss needs a TLS connector) and completes the opening handshake.
    public static func connect(url: URL, connector: any SnowflakeStreamConnector) async throws(SnowflakeError) -> WebSocketByteStream {
        guard url.scheme?.lowercased() == "ws" || url.scheme?.lowercased() == "wss", let host = url.host else {
            throw SnowflakeError(code: .brokerURL, kind: .invalidInput, message: "a WebSocket URL must be ws:// or wss://")
        }
        let secure = url.scheme?.lowercased() == "wss"
        let port = UInt16(clamping: url.port ?? (secure ? 443 : 80))
        let transport = try await connector.connect(host: host, port: port, tlsServerName: secure ? host : nil)
        var key = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for i in key.indices { key[i] = UInt8.random(in: .min ... .max, using: &generator) }
        let keyText = Data(key).base64EncodedString()
        var path = url.path(percentEncoded: true)
        if path.isEmpty { path = "/" }
        if let query = url.query(percentEncoded: true) { path += "?" + query }
        let hostHeader = url.port.map { "\(host):\($0)" } ?? host
        let request = "GET \(path) HTTP/1.1\r\nHost: \(hostHeader)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(keyText)\r\nSec-WebSocket-Version: 13\r\n\r\n"
        do throws(SnowflakeError) {
            let deadline = ContinuousClock.now + Self.handshakeDeadline
            try await transport.write(Array(request.utf8))
            var buffer: [UInt8] = []
            var headEnd: Int?
            while headEnd == nil {
                let piece = try await transport.read(maxLength: 4096)
                guard !piece.isEmpty else {
                    throw SnowflakeError(code: .connection, kind: .network, message: "the WebSocket server closed during the handshake")
                }
                buffer += piece
                headEnd = buffer.indices.dropLast(3).first {
                    buffer[$0] == 13 && buffer[$0 + 1] == 10 && buffer[$0 + 2] == 13 && buffer[$0 + 3] == 10
                }
                guard buffer.count < Self.handshakeLimit || headEnd != nil else {
                    throw SnowflakeError(code: .brokerHTTP, kind: .protocolViolation, message: "the WebSocket server's handshake response is too large")
                }
                guard headEnd != nil || ContinuousClock.now < deadline else {
                    throw SnowflakeError(code: .timeout, kind: .network, message: "the WebSocket server did not finish its handshake in time")
                }
            }
            let head = String(decoding: buffer[..<headEnd!], as: UTF8.self).components(separatedBy: "\r\n")
            guard head.first?.split(separator: " ").dropFirst().first == "101" else {
                throw SnowflakeError(code: .brokerHTTP, kind: .protocolViolation,
                                     message: "the WebSocket server refused the upgrade")
            }
            let expected = Data(Digest.sha1(Array((keyText + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))).base64EncodedString()
            let accept = head.dropFirst().first { $0.lowercased().hasPrefix("sec-websocket-accept:") }
                .map { $0.dropFirst("sec-websocket-accept:".count).trimmingCharacters(in: .whitespaces) }
            guard accept == expected else {
                throw SnowflakeError(code: .brokerHTTP, kind: .protocolViolation,
                                     message: "the WebSocket server's Sec-WebSocket-Accept is wrong")
            }
            return WebSocketByteStream(transport: transport, leftover: Array(buffer[(headEnd! + 4)...]))
        } catch {
            transport.close()
            throw error
        }
    }

    public func write(_ bytes: [UInt8]) async throws(SnowflakeError) {
        try await transport.write(Self.frame(opcode: 0x2, payload: bytes))
    }

    static func frame(opcode: UInt8, payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x80 | opcode]
        switch payload.count {
        case 0..<126: out.append(0x80 | UInt8(payload.count))
        case 126...0xffff: out += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
        default:
            out.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((payload.count >> shift) & 0xff)) }
        }
        var generator = SystemRandomNumberGenerator()
        let mask = (0..<4).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        out += mask
        out.reserveCapacity(out.count + payload.count)
        for (i, byte) in payload.enumerated() { out.append(byte ^ mask[i & 3]) }
        return out
    }

    public func read(maxLength: Int) async throws(SnowflakeError) -> [UInt8] {
        while true {
            // Parse as many frames as the buffer holds; return the first data.
            let (data, control, closed) = try state.withLock { s throws(SnowflakeError) -> ([UInt8], [UInt8]?, Bool) in
                try Self.parse(&s)
            }
            if let control { try await transport.write(control) }
            if !data.isEmpty { return data }
            if closed { return [] }
            let piece = try await transport.read(maxLength: max(maxLength, 4096))
            if piece.isEmpty {
                let wasClosed = state.withLock { $0.closed }
                if wasClosed { return [] }
                throw SnowflakeError(code: .closed, kind: .network, message: "the WebSocket connection ended without a close frame")
            }
            state.withLock { $0.buffer += piece }
        }
    }

    /// One frame from the buffer: data payload, a reply to send (pong / close), or closed.
    private static func parse(_ s: inout ReadState) throws(SnowflakeError) -> ([UInt8], [UInt8]?, Bool) {
        if s.closed { return ([], nil, true) }
        let b = s.buffer
        guard b.count >= 2 else { return ([], nil, false) }
        let opcode = b[0] & 0x0f
        let masked = b[1] & 0x80 != 0
        var length = Int(b[1] & 0x7f)
        var index = 2
        if length == 126 {
            guard b.count >= 4 else { return ([], nil, false) }
            length = Int(b[2]) << 8 | Int(b[3])
            index = 4
        } else if length == 127 {
            guard b.count >= 10 else { return ([], nil, false) }
            // The top bit must be 0 (RFC 6455 5.2); the cap below also keeps the sums in range.
            let wide = (2..<10).reduce(UInt64(0)) { $0 << 8 | UInt64(b[$1]) }
            guard wide <= UInt64(maxFrameLength) else { throw frameTooLarge() }
            length = Int(wide)
            index = 10
        }
        guard length <= maxFrameLength else { throw frameTooLarge() }
        var mask: [UInt8] = []
        if masked {
            guard b.count >= index + 4 else { return ([], nil, false) }
            mask = Array(b[index..<(index + 4)])
            index += 4
        }
        guard b.count >= index + length else { return ([], nil, false) }
        var payload = Array(b[index..<(index + length)])
        if masked { for i in payload.indices { payload[i] ^= mask[i & 3] } }
        s.buffer.removeFirst(index + length)
        switch opcode {
        case 0x0, 0x1, 0x2:
            return (payload, nil, false)
        case 0x8:
            s.closed = true
            return ([], frame(opcode: 0x8, payload: Array(payload.prefix(2))), true)
        case 0x9:
            return ([], frame(opcode: 0xA, payload: payload), false)
        default:
            return ([], nil, false)  // pong or reserved: ignored
        }
    }

    private static func frameTooLarge() -> SnowflakeError {
        SnowflakeError(code: .webSocketFrameTooLarge, kind: .protocolViolation,
                       message: "the WebSocket server sent a frame longer than \(maxFrameLength) bytes")
    }

    public func close() {
        transport.close()
    }
}
