import Foundation
import Synchronization
import TransportWire

// A WebSocket client carrying a byte stream, as the snowflake proxy does towards the server (and
// as tests use it to reach the server without WebRTC), on TransportWire's RFC 6455 codec and
// opening handshake: one binary message per write, masked (client side); incoming binary/text
// messages are concatenated into the byte stream, pings answered with pongs, a close frame ends
// the stream.
//
// Hostile input: a message is at most maxFrameLength bytes (a longer one, or a 64-bit length with
// the top bit set, is websocket-frame-too-large before anything is buffered); any other breach of
// RFC 6455 is websocket-protocol. The handshake answer is read by TransportWire's head reader (16
// KiB at most) and must be complete by handshakeDeadline (checked after every read), so a server
// that drips it cannot hold the dial.

public final class WebSocketByteStream: ByteStream {
    private let transport: any ByteStream
    private let state: Mutex<ReadState>

    private struct ReadState: Sendable {
        var parser: WebSocketFrameParser
        /// Message bytes decoded and not yet read.
        var pending: [UInt8] = []
        var closed = false
    }

    /// Largest message accepted (the snowflake server sends KCP packets of at most 1400 bytes).
    public static let maxFrameLength = 1 << 20
    /// The whole opening handshake, request to 101 answer.
    public static let handshakeDeadline: Duration = .seconds(20)

    private init(transport: any ByteStream) {
        self.transport = transport
        self.state = Mutex(ReadState(parser: WebSocketFrameParser(maximumMessageBytes: Self.maxFrameLength)))
    }

    /// Opens `url` (ws:// only; wss needs a TLS connector) and completes the opening handshake.
    public static func connect(url: URL, connector: any SnowflakeStreamConnector) async throws(SnowflakeError) -> WebSocketByteStream {
        guard url.scheme?.lowercased() == "ws" || url.scheme?.lowercased() == "wss", let host = url.host else {
            throw SnowflakeError(code: .brokerURL, kind: .invalidInput, message: "a WebSocket URL must be ws:// or wss://")
        }
        let secure = url.scheme?.lowercased() == "wss"
        let port = UInt16(clamping: url.port ?? (secure ? 443 : 80))
        let transport = try await connector.connect(host: host, port: port, tlsServerName: secure ? host : nil)
        let key = WebSocketHandshake.newKey()
        var path = url.path(percentEncoded: true)
        if path.isEmpty { path = "/" }
        if let query = url.query(percentEncoded: true) { path += "?" + query }
        let hostHeader = url.port.map { "\(host):\($0)" } ?? host
        do throws(SnowflakeError) {
            let deadline = ContinuousClock.now + Self.handshakeDeadline
            try await Self.wrapping { try await transport.write(WebSocketHandshake.request(target: path, host: hostHeader, key: key)) }
            var reader = WebSocketHandshakeReader(key: key)
            while true {
                let piece = try await Self.wrapping { try await transport.read(maximumCount: 4096) }
                guard !piece.isEmpty else {
                    throw SnowflakeError(code: .connection, kind: .network, message: "the WebSocket server closed during the handshake")
                }
                let leftover: [UInt8]?
                do {
                    leftover = try reader.feed(piece)
                } catch {
                    throw SnowflakeError(code: .brokerHTTP, kind: .protocolViolation, message: error.message)
                }
                if let leftover {
                    let stream = WebSocketByteStream(transport: transport)
                    if !leftover.isEmpty { try stream.decode(leftover) }
                    return stream
                }
                guard ContinuousClock.now < deadline else {
                    throw SnowflakeError(code: .timeout, kind: .network, message: "the WebSocket server did not finish its handshake in time")
                }
            }
        } catch {
            transport.close()
            throw error
        }
    }

    private static func wrapping<T>(_ body: () async throws -> T) async throws(SnowflakeError) -> T {
        do {
            return try await body()
        } catch {
            throw SnowflakeError(streamFailure: error)
        }
    }

    public func write(_ bytes: [UInt8]) async throws(SnowflakeError) {
        try await Self.wrapping { try await transport.write(WebSocketFrameEncoder.frame(.binary, payload: bytes)) }
    }

    /// Decodes received bytes into the pending data; returns the replies the frames call for
    /// (pongs, the answer to a close).
    @discardableResult
    private func decode(_ bytes: [UInt8]) throws(SnowflakeError) -> [UInt8] {
        try state.withLock { s throws(SnowflakeError) -> [UInt8] in
            guard !s.closed else { return [] }
            let events: [WebSocketEvent]
            do throws(WebSocketFrameParser.Violation) {
                events = try s.parser.feed(bytes)
            } catch {
                s.closed = true
                if error.lengthRefused {
                    throw SnowflakeError(code: .webSocketFrameTooLarge, kind: .protocolViolation,
                                         message: "the WebSocket server sent a frame longer than \(Self.maxFrameLength) bytes")
                }
                throw SnowflakeError(code: .webSocketProtocol, kind: .protocolViolation,
                                     message: "the WebSocket server broke the protocol: \(error.status.reason)")
            }
            var replies: [UInt8] = []
            for event in events where !s.closed {
                switch event {
                case .message(.binary(let data)): s.pending += data
                case .message(.text(let text)): s.pending += Array(text.utf8)
                case .ping(let payload): replies += WebSocketFrameEncoder.frame(.pong, payload: payload)
                case .pong: break
                case .close(let status):
                    s.closed = true
                    replies += status.map { WebSocketFrameEncoder.frame(.close, payload: [UInt8($0.code >> 8), UInt8($0.code & 0xff)]) }
                        ?? WebSocketFrameEncoder.frame(.close, payload: [])
                }
            }
            return replies
        }
    }

    public func read(maximumCount: Int) async throws(SnowflakeError) -> [UInt8] {
        while true {
            let (data, closed) = state.withLock { s -> ([UInt8], Bool) in
                let take = min(max(1, maximumCount), s.pending.count)
                defer { s.pending.removeFirst(take) }
                return (Array(s.pending.prefix(take)), s.closed)
            }
            if !data.isEmpty { return data }
            if closed { return [] }
            let piece = try await Self.wrapping { try await transport.read(maximumCount: max(maximumCount, 4096)) }
            if piece.isEmpty {
                throw SnowflakeError(code: .closed, kind: .network, message: "the WebSocket connection ended without a close frame")
            }
            let replies = try decode(piece)
            if !replies.isEmpty { try await Self.wrapping { try await transport.write(replies) } }
        }
    }

    /// A carrier has no half-close: the session ends with `close`.
    public func closeWrite() async {}

    public func close() {
        transport.close()
    }
}
