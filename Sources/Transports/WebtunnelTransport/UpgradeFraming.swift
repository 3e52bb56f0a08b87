// webtunnel wire format (reference client, the spec in effect:
// lyrebird v0.5.0 transports/webtunnel/client.go with webtunnel's transport/httpupgrade).
//
// 1. TCP to one of the addresses the url= host resolves to (system resolver; loopback,
//    unspecified, multicast, link-local and private addresses dropped), through TOR_PT_PROXY when
//    set. The bridge line's own address is a synthetic placeholder and is never dialled.
// 2. For https: TLS, SNI = servername= or the url host, certificate verified against the trust
//    store and that name. The reference client offers no ALPN (Go crypto/tls with only ServerName
//    set); ours sends Firefox ESR's hello with ALPN http/1.1 (WebtunnelTransport.applicationProtocols).
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
// Caps: the answer's head is read by TransportWire's HTTPHeadReader (HTTPResponseHead.swift states
// its grammar and caps: a head of at most 16 KiB, 100 header lines, 8 KiB a line); the whole
// exchange runs under the transport's handshake deadline. Lines end in LF with an optional CR
// before it (Go's textproto accepts both, and so does the shared reader).

import TransportBase
import TransportWire
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
    public static let maximumHeaderBytes = HTTPHeadReader.maximumHeadBytes
    public static let maximumHeaderLines = HTTPHeadReader.maximumFieldCount

    /// The bytes that followed the header block when the answer is a valid upgrade; nil while the
    /// header block is incomplete. Throws on anything the reference client would refuse, and when
    /// the block grows past the caps.
    public static func parse(_ received: [UInt8]) throws(TransportError) -> [UInt8]? {
        let parsed: (head: HTTPResponseHead, remainder: [UInt8])?
        do {
            parsed = try HTTPHeadReader.parse(received)
        } catch where error.code == .httpTooLarge {
            throw TransportError(code: .webtunnelResponseTooLarge, kind: .protocolViolation,
                                 message: "the server's answer is too large: \(error.message)")
        } catch {
            throw TransportError(code: .webtunnelMalformedResponse, kind: .protocolViolation,
                                 message: "the server's answer to the upgrade request is not HTTP: \(error.message)")
        }
        guard let (head, remainder) = parsed else { return nil }
        guard head.status == 101, head.reason == Array("Switching Protocols".utf8) else {
            // Only the three digits: the reason phrase is the server's text.
            throw TransportError(code: .webtunnelUpgradeRefused, kind: .protocolViolation,
                                 message: "the server answered \(head.status) instead of 101 Switching Protocols")
        }
        // Header.Get: the first value of the canonical key.
        guard head.value("upgrade", is: "websocket") else {
            throw TransportError(code: .webtunnelUpgradeRefused, kind: .protocolViolation,
                                 message: "the server's 101 answer lacks 'Upgrade: websocket'")
        }
        guard head.value("connection", is: "upgrade") else {
            throw TransportError(code: .webtunnelUpgradeRefused, kind: .protocolViolation,
                                 message: "the server's 101 answer lacks 'Connection: upgrade'")
        }
        return remainder
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
