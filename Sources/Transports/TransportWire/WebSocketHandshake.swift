// The RFC 6455 opening handshake (section 4), client side, as every WebSocket user here runs it.
//
// The request (section 4.1), one write:
//
//   GET <target> HTTP/1.1 CRLF
//   Host: <host[:port]> CRLF
//   Upgrade: websocket CRLF
//   Connection: Upgrade CRLF
//   Sec-WebSocket-Key: <base64 of 16 fresh random bytes> CRLF
//   Sec-WebSocket-Version: 13 CRLF
//   CRLF
//
// The server's half (section 4.2.2), as the client reads it:
//
//   HTTP/1.1 101 Switching Protocols CRLF
//   Upgrade: websocket CRLF                        (case-insensitive)
//   Connection: Upgrade CRLF                       (a list that holds the token "upgrade")
//   Sec-WebSocket-Accept: base64(SHA-1(key | 258EAFA5-E914-47DA-95CA-C5AB0DC85B11)) CRLF
//   CRLF
//   (frames may follow at once: they are handed on as the leftover)
//
// No extension and no subprotocol is offered, so a reply that selects an extension is refused.
// The head is read by HTTPHeadReader (HTTPResponseHead.swift: its grammar and caps, 16 KiB of head
// at most); the wait for it is bounded by the caller's connect timeout or handshake deadline.
import PosternCrypto
import Foundation
import PosternSystem

/// The request side of the opening handshake.
public enum WebSocketHandshake {
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// A fresh Sec-WebSocket-Key.
    public static func newKey() -> String {
        var nonce = [UInt8](repeating: 0, count: 16)
        SecureRandom.fill(&nonce)
        return Data(nonce).base64EncodedString()
    }

    /// The request for `target` (path and query, as they go on the wire) on `host` (the Host
    /// header's value, with a port when the caller wants one).
    public static func request(target: String, host: String, key: String) -> [UInt8] {
        Array(("GET \(target) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8)
    }

    /// What the server must answer in Sec-WebSocket-Accept for `key`.
    public static func acceptValue(for key: String) -> String {
        Data(Digest.sha1(Array((key + guid).utf8))).base64EncodedString()
    }
}

/// Accumulates the server's reply to our upgrade request and validates it once the head ends.
/// Pure (no I/O), so the `WebSocketHandshakeFuzzer` target can drive it with arbitrary reads.
/// Errors are `websocket-handshake` WireErrors whose message is a whole sentence.
public struct WebSocketHandshakeReader: Sendable {
    /// The most head bytes a server may send before its blank line.
    public static let maximumHeadBytes = HTTPHeadReader.maximumHeadBytes

    public let key: String
    private var head = HTTPHeadReader()

    public init(key: String) { self.key = key }

    /// The bytes buffered so far (never more than the head cap plus 3 plus one read).
    public var bufferedCount: Int { head.bufferedCount }

    /// Feeds one read. Returns the bytes after the head (possibly empty) once a valid head has
    /// arrived, nil while more is needed; throws on an invalid or oversized head.
    public mutating func feed(_ bytes: some Collection<UInt8>) throws(WireError) -> [UInt8]? {
        let parsed: (head: HTTPResponseHead, remainder: [UInt8])?
        do {
            parsed = try head.append(bytes)
        } catch where error.code == .httpTooLarge {
            throw Self.refusal("the WebSocket server's handshake reply is too large: \(error.message)")
        } catch {
            throw Self.refusal("the WebSocket server's handshake reply is not HTTP: \(error.message)")
        }
        guard let parsed else { return nil }
        try Self.validate(parsed.head, key: key)
        return parsed.remainder
    }

    /// Checks a complete head: status 101, Upgrade: websocket, Connection: upgrade, the right
    /// Sec-WebSocket-Accept, no extension.
    public static func validate(_ head: HTTPResponseHead, key: String) throws(WireError) {
        guard head.status == 101 else {
            // The status line is the server's text: shown with its control characters made visible.
            throw refusal("WebSocket handshake refused: \(PlainText.visible(String(decoding: head.statusLine.prefix(80), as: UTF8.self)))")
        }
        let connectionHasUpgrade = head.value("connection").map { value in
            value.split(separator: UInt8(ascii: ",")).contains { HTTPResponseHead.equalsIgnoringCase(trimmed($0), "upgrade") }
        } ?? false
        guard head.value("upgrade", is: "websocket"), connectionHasUpgrade else {
            throw refusal("handshake response lacks Upgrade: websocket / Connection: Upgrade")
        }
        guard head.value("sec-websocket-accept").map({ String(decoding: $0, as: UTF8.self) }) == WebSocketHandshake.acceptValue(for: key) else {
            throw refusal("handshake response has a wrong Sec-WebSocket-Accept")
        }
        if let extensions = head.value("sec-websocket-extensions"), !extensions.isEmpty {
            throw refusal("server selected an extension we did not offer")
        }
    }

    private static func refusal(_ message: String) -> WireError {
        WireError(code: .webSocketHandshake, kind: .protocolViolation, message: message)
    }

    /// Without leading and trailing spaces and tabs.
    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var lower = bytes.startIndex, upper = bytes.endIndex
        while lower < upper, bytes[lower] == 0x20 || bytes[lower] == 0x09 { lower += 1 }
        while upper > lower, bytes[upper - 1] == 0x20 || bytes[upper - 1] == 0x09 { upper -= 1 }
        return bytes[lower..<upper]
    }
}
