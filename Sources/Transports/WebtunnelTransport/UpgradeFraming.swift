// webtunnel wire format (reference client, the spec in effect:
// lyrebird v0.5.0 transports/webtunnel/client.go with webtunnel's transport/httpupgrade).
//
// 1. TCP to one of the addresses the url= host resolves to (system resolver; loopback,
//    unspecified, multicast, link-local and private addresses dropped), through TOR_PT_PROXY when
//    set. The bridge line's own address is a synthetic placeholder and is never dialled.
// 2. For https: TLS, SNI = servername= or the url host, certificate verified against the trust
//    store and that name. No ALPN (Go crypto/tls with only ServerName set offers none).
// 3. The client writes exactly this request (Go's Request.Write output, header order included):
//
//        GET /<path> HTTP/1.1\r\n
//        Host: <servername or url host, no port>\r\n
//        User-Agent: Go-http-client/1.1\r\n
//        Connection: upgrade\r\n
//        Upgrade: websocket\r\n
//        \r\n
//
//    <path> is the url's escaped path without its leading '/', written verbatim; query and
//    fragment are dropped. No Sec-WebSocket-Key: this is not a WebSocket handshake.
// 4. The server answers a status line and headers. Accepted only when the status text is exactly
//    `101 Switching Protocols` and the first `Upgrade` value is `websocket` and the first
//    `Connection` value is `upgrade` (values case-insensitive), as the reference client checks.
// 5. From then on both directions carry tor's raw TLS bytes, no framing at all. Bytes that
//    arrive after the header block belong to that stream and are kept (the reference client can
//    lose them; it is harmless only because the server never speaks first).
//
// Caps: the response header block may be at most `UpgradeResponse.maximumHeaderBytes`, with at
// most `maximumHeaderLines` lines; the whole exchange runs under the transport's handshake
// deadline. Lines end in LF with an optional CR before it (Go's textproto accepts both).

import TransportBase
import PosternSystem

/// The upgrade request, byte for byte as the reference client writes it.
public enum UpgradeRequest {
    public static func bytes(requestTarget: String, host: String) -> [UInt8] {
        Array("GET \(requestTarget) HTTP/1.1\r\nHost: \(host)\r\nUser-Agent: Go-http-client/1.1\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n".utf8)
    }
}

/// Reads the server's answer to the upgrade request.
public enum UpgradeResponse {
    /// Far above any real answer (nginx's 101 is about 150 bytes); the reference client has no cap.
    public static let maximumHeaderBytes = 16_384
    public static let maximumHeaderLines = 100

    /// The bytes that followed the header block when the answer is a valid upgrade; nil while the
    /// header block is incomplete. Throws on anything the reference client would refuse, and when
    /// the block grows past the caps.
    public static func parse(_ received: [UInt8]) throws(TransportError) -> [UInt8]? {
        guard let end = headerEnd(received) else {
            if received.count > maximumHeaderBytes {
                throw TransportError(code: .webtunnelResponseTooLarge, kind: .protocolViolation,
                                     message: "the server's answer has no end of headers within \(maximumHeaderBytes) bytes")
            }
            return nil
        }
        guard end.headerLength <= maximumHeaderBytes else {
            throw TransportError(code: .webtunnelResponseTooLarge, kind: .protocolViolation,
                                 message: "the server's answer headers are longer than \(maximumHeaderBytes) bytes")
        }
        let lines = splitLines(received[..<end.headerLength])
        guard lines.count <= maximumHeaderLines + 1 else {
            throw TransportError(code: .webtunnelResponseTooLarge, kind: .protocolViolation,
                                 message: "the server's answer has more than \(maximumHeaderLines) header lines")
        }
        guard let statusLine = lines.first else { throw malformed("an empty answer") }
        try checkStatusLine(statusLine)
        var upgrade: [UInt8]?
        var connection: [UInt8]?
        for line in lines.dropFirst() {
            let (name, value) = try parseHeader(line)
            // Header.Get: the first value of the canonical key.
            if upgrade == nil && equalsIgnoringCase(name, "upgrade") { upgrade = value }
            if connection == nil && equalsIgnoringCase(name, "connection") { connection = value }
        }
        guard let upgrade, equalsIgnoringCase(upgrade, "websocket") else {
            throw TransportError(code: .webtunnelUpgradeRefused, kind: .protocolViolation,
                                 message: "the server's 101 answer lacks 'Upgrade: websocket'")
        }
        guard let connection, equalsIgnoringCase(connection, "upgrade") else {
            throw TransportError(code: .webtunnelUpgradeRefused, kind: .protocolViolation,
                                 message: "the server's 101 answer lacks 'Connection: upgrade'")
        }
        return Array(received[end.total...])
    }

    /// Where the header block ends: the blank line's end, and the length before that blank line.
    private static func headerEnd(_ bytes: [UInt8]) -> (headerLength: Int, total: Int)? {
        var lineStart = 0
        var index = 0
        while index < bytes.count {
            if bytes[index] == 0x0A {
                let contentEnd = index > lineStart && bytes[index - 1] == 0x0D ? index - 1 : index
                if contentEnd == lineStart {
                    // The first line may not be blank: that is no status line at all, which the
                    // status check reports; headerLength 0 gives it no lines.
                    return (lineStart, index + 1)
                }
                lineStart = index + 1
            }
            index += 1
        }
        return nil
    }

    private static func splitLines(_ block: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var start = block.startIndex
        var index = block.startIndex
        while index < block.endIndex {
            if block[index] == 0x0A {
                let end = index > start && block[index - 1] == 0x0D ? index - 1 : index
                lines.append(block[start..<end])
                start = index + 1
            }
            index += 1
        }
        return lines
    }

    private static func checkStatusLine(_ line: ArraySlice<UInt8>) throws(TransportError) {
        // "HTTP/d.d" SP status; Go cuts at the first space and trims spaces left of the status.
        guard let space = line.firstIndex(of: 0x20) else { throw malformed("a status line without a space") }
        let proto = Array(line[..<space])
        guard proto.count == 8, Array(proto.prefix(5)) == Array("HTTP/".utf8), isDigit(proto[5]), proto[6] == UInt8(ascii: "."),
              isDigit(proto[7]) else {
            throw malformed("a status line that does not start with HTTP/x.y")
        }
        let status = line[line.index(after: space)...].drop { $0 == 0x20 }
        guard status.count >= 3, status.prefix(3).allSatisfy(isDigit) else { throw malformed("a status line without a status code") }
        guard Array(status) == Array("101 Switching Protocols".utf8) else {
            // Only the three digits: the reason phrase is the server's text.
            let code = String(decoding: status.prefix(3), as: UTF8.self)
            throw TransportError(code: .webtunnelUpgradeRefused, kind: .protocolViolation,
                                 message: "the server answered \(code) instead of 101 Switching Protocols")
        }
    }

    private static func parseHeader(_ line: ArraySlice<UInt8>) throws(TransportError) -> ([UInt8], [UInt8]) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { throw malformed("a header line without ':'") }
        let name = line[..<colon]
        // A token: no spaces (a leading space would be an obsolete line folding, which is refused).
        guard !name.isEmpty, name.allSatisfy(isTokenByte) else { throw malformed("a header name that is not a token") }
        var value = line[line.index(after: colon)...]
        while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
        while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
        return (Array(name), Array(value))
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        if byte >= 0x30 && byte <= 0x39 { return true }
        if (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A { return true }
        return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
    }

    /// ASCII case-insensitive comparison with a lowercase literal.
    private static func equalsIgnoringCase<C: Collection<UInt8>>(_ bytes: C, _ lowercase: String) -> Bool {
        let expected = Array(lowercase.utf8)
        guard bytes.count == expected.count else { return false }
        return zip(bytes, expected).allSatisfy { pair in
            let byte = pair.0
            let lowered = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
            return lowered == pair.1
        }
    }

    private static func malformed(_ what: String) -> TransportError {
        TransportError(code: .webtunnelMalformedResponse, kind: .protocolViolation,
                       message: "the server's answer to the upgrade request is not HTTP: \(what)")
    }
}

extension TransportError.Code {
    public static let webtunnelMalformedResponse = Self(rawValue: "webtunnel-malformed-response")
    public static let webtunnelUpgradeRefused = Self(rawValue: "webtunnel-upgrade-refused")
    public static let webtunnelResponseTooLarge = Self(rawValue: "webtunnel-response-too-large")
    public static let webtunnelServerClosed = Self(rawValue: "webtunnel-server-closed")
    public static let webtunnelHandshakeTimeout = Self(rawValue: "webtunnel-handshake-timeout")
    public static let webtunnelResolveFailed = Self(rawValue: "webtunnel-resolve-failed")
    public static let webtunnelNoUsableAddress = Self(rawValue: "webtunnel-no-usable-address")
    public static let webtunnelConnectFailed = Self(rawValue: "webtunnel-connect-failed")
    public static let webtunnelTLSFailed = Self(rawValue: "webtunnel-tls-failed")
}
