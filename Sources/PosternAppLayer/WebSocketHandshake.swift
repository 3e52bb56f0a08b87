// The server's half of the RFC 6455 opening handshake (§4.2.2), as the client reads it:
//
//   HTTP/1.1 101 Switching Protocols CRLF
//   Upgrade: websocket CRLF
//   Connection: Upgrade CRLF
//   Sec-WebSocket-Accept: base64(SHA-1(key | 258EAFA5-E914-47DA-95CA-C5AB0DC85B11)) CRLF
//   CRLF
//   (frames may follow at once: they are handed on as the leftover)
//
// The rule for this decoder, as for every decoder of network input in Postern: no byte from the
// peer may trap, hang or grow memory without a stated cap. Nothing here does arithmetic on a number
// the peer chose; the only peer-controlled size is the head itself, capped at
// `maximumHeadBytes` (a head that has not ended by then is refused, not buffered); the wait for it
// is bounded by the connect timeout in WebSocketConnection.
import PosternCrypto
import Foundation
import PosternCore
import PosternSystem

/// Accumulates the server's reply to our upgrade request and validates it once the head ends.
/// Pure (no I/O), so the `WebSocketHandshakeFuzzer` target (Fuzz/WebSocketHandshakeFuzzer) can drive it
/// with arbitrary reads; `package` access for that.
package struct WebSocketHandshakeReader {
    /// The most head bytes a server may send before its blank line.
    package static let maximumHeadBytes = 16 * 1024
    private static let terminator: [UInt8] = [13, 10, 13, 10]

    let key: String
    private var received: [UInt8] = []
    /// Where the search for CRLF CRLF resumes (already-searched bytes are not searched again).
    private var searchFrom = 0

    package init(key: String) { self.key = key }

    /// The bytes buffered so far (never more than the head cap plus one read's worth).
    package var bufferedCount: Int { received.count }

    /// Feeds one read. Returns the bytes after the head (possibly empty) once a valid head has
    /// arrived, nil while more is needed; throws on an invalid or oversized head.
    package mutating func feed(_ bytes: some Collection<UInt8>) throws(AppLayerError) -> [UInt8]? {
        received.append(contentsOf: bytes)
        let limit = min(received.count, Self.maximumHeadBytes + Self.terminator.count)
        if let end = Self.terminatorStart(in: received, from: min(searchFrom, limit), to: limit) {
            try Self.validate(received[..<end], key: key)
            return Array(received[(end + Self.terminator.count)...])
        }
        guard received.count < Self.maximumHeadBytes + Self.terminator.count else {
            throw AppLayerError(.webSocketProtocol, "the WebSocket server's handshake reply is over \(Self.maximumHeadBytes) bytes")
        }
        searchFrom = max(0, received.count - (Self.terminator.count - 1))
        return nil
    }

    /// The first CR LF CR LF that lies wholly in `bytes[start..<end]`.
    private static func terminatorStart(in bytes: [UInt8], from start: Int, to end: Int) -> Int? {
        var index = start
        while index + 4 <= end {
            if bytes[index + 3] != 10 {
                // No terminator can end at index + 3; skip ahead by how far a CR LF CR LF could still start.
                index += bytes[index + 3] == 13 ? 1 : 4
                continue
            }
            if bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 { return index }
            index += 1
        }
        return nil
    }

    package static func acceptValue(for key: String) -> String {
        Data(Digest.sha1(Array((key + WebSocketConnection.guid).utf8))).base64EncodedString()
    }

    /// Checks the head (without its final CR LF CR LF) byte by byte: status 101, Upgrade:
    /// websocket, Connection: upgrade, the right Sec-WebSocket-Accept, no extension.
    static func validate(_ head: ArraySlice<UInt8>, key: String) throws(AppLayerError) {
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = head.startIndex
        var index = head.startIndex
        while index < head.endIndex {
            if head[index] == 13, index + 1 < head.endIndex, head[index + 1] == 10 {
                lines.append(head[lineStart..<index])
                index += 2
                lineStart = index
            } else {
                index += 1
            }
        }
        lines.append(head[lineStart..<head.endIndex])
        let statusLine = lines[0]
        let statusParts = statusLine.split(separator: 0x20, omittingEmptySubsequences: true)
        guard statusParts.count >= 2, statusParts[0].starts(with: Array("HTTP/1.".utf8)), Array(statusParts[1]) == Array("101".utf8) else {
            // The status line is the server's text: shown with its control characters made visible.
            throw AppLayerError(.webSocketProtocol,
                                "WebSocket handshake refused: \(PlainText.visible(String(decoding: statusLine.prefix(80), as: UTF8.self)))")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let name = String(decoding: trimmed(line[line.startIndex..<colon]).map(asciiLowercased), as: UTF8.self)
            headers[name] = String(decoding: trimmed(line[(colon + 1)...]), as: UTF8.self)
        }
        guard headers["upgrade"].map({ String(decoding: $0.utf8.map(asciiLowercased), as: UTF8.self) }) == "websocket",
              headers["connection"]?.utf8.map(asciiLowercased).split(separator: UInt8(ascii: ","))
                .contains(where: { Array(trimmed($0[...])) == Array("upgrade".utf8) }) == true else {
            throw AppLayerError(.webSocketProtocol, "handshake response lacks Upgrade: websocket / Connection: Upgrade")
        }
        guard headers["sec-websocket-accept"] == acceptValue(for: key) else {
            throw AppLayerError(.webSocketProtocol, "handshake response has a wrong Sec-WebSocket-Accept")
        }
        if let extensions = headers["sec-websocket-extensions"], !extensions.isEmpty {
            throw AppLayerError(.webSocketProtocol, "server selected an extension we did not offer")
        }
    }

    private static func asciiLowercased(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }

    /// Without leading and trailing spaces and tabs.
    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var lower = bytes.startIndex, upper = bytes.endIndex
        while lower < upper, bytes[lower] == 0x20 || bytes[lower] == 0x09 { lower += 1 }
        while upper > lower, bytes[upper - 1] == 0x20 || bytes[upper - 1] == 0x09 { upper -= 1 }
        return bytes[lower..<upper]
    }
}
