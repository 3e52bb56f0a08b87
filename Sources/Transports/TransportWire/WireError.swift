import PosternSystem

/// The errors of the shared wire code (HTTP/1.1 heads, HTTP/2, WebSocket, deadlines): the shape of
/// every public Postern error (``CodedError``). Each transport turns them into its own error type
/// with its own codes; the messages are fragments written to be placed after the transport's own
/// words ("the server's answer is not HTTP: " + message), and never hold a peer's address or secret.
public typealias WireError = CodedError<WireErrorDomain>

public enum WireErrorDomain: ErrorDomain {
    public static var defaultKind: WireError.Kind { .protocolViolation }
}

extension WireError.Code {
    /// An HTTP/1.1 response head that breaks RFC 9112's grammar (status line or a header line).
    public static let httpMalformed = Self("http-malformed")
    /// An HTTP/1.1 response head past a cap (head bytes, header lines, line length), or a framing
    /// line of its body past one (a chunk-size line, the trailer section).
    public static let httpTooLarge = Self("http-too-large")
    /// An HTTP/1.1 response body over the reader's cap (its Content-Length, a chunk, or the bytes
    /// before the close).
    public static let httpBodyTooLarge = Self("http-body-too-large")
    /// The server's answer to a WebSocket opening handshake is not a valid acceptance.
    public static let webSocketHandshake = Self("websocket-handshake")
    /// The peer closed the connection before the exchange was complete.
    public static let closed = Self("closed")
    /// An HTTP/2 connection or stream failed: the server broke the protocol, reset the stream or
    /// went away before answering.
    public static let http2Failed = Self("http2-failed")
    /// An HTTP/2 response past a cap (header block, body, concurrent requests).
    public static let http2TooLarge = Self("http2-too-large")
    /// A deadline passed.
    public static let timeout = Self("timeout")
}
