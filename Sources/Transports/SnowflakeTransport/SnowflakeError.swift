import PosternSystem
import TransportBase
import TransportTLS
import TransportWire
import TurboTunnel

/// The one public error type of the snowflake transport: the shape of every public Postern error
/// (``CodedError``), open sets of codes and kinds, so that new failures can be added without
/// breaking callers. Messages never contain a broker URL, front, bridge fingerprint or SDP.
public typealias SnowflakeError = CodedError<SnowflakeErrorDomain>

public enum SnowflakeErrorDomain: ErrorDomain {
    public static var defaultKind: SnowflakeError.Kind { .protocolViolation }
}

extension SnowflakeError.Code {
    public static let encapsulationTooLong = Self("encapsulation-too-long")
    public static let kcpMalformed = Self("kcp-malformed")
    public static let kcpWrongConversation = Self("kcp-wrong-conversation")
    public static let smuxMalformed = Self("smux-malformed")
    public static let smuxWrongVersion = Self("smux-wrong-version")
    /// The peer sent more stream data than the window we granted (bytes tor has not read yet).
    public static let smuxWindowExceeded = Self("smux-window-exceeded")
    /// The proxy sent data-channel messages faster than the session takes them, past the cap.
    public static let dataChannelFlood = Self("data-channel-flood")
    /// A WebSocket frame longer than the cap (or with an impossible length).
    public static let webSocketFrameTooLarge = Self("websocket-frame-too-large")
    /// The WebSocket server broke RFC 6455 otherwise (a masked or reserved frame, bad UTF-8 text).
    public static let webSocketProtocol = Self("websocket-protocol")
    public static let brokerMessageMalformed = Self("broker-message-malformed")
    public static let brokerError = Self("broker-error")
    public static let brokerHTTP = Self("broker-http")
    public static let brokerURL = Self("broker-url")
    public static let ampArmor = Self("amp-armor")
    public static let responseTooLarge = Self("response-too-large")
    public static let connection = Self("connection")
    public static let unsupported = Self("unsupported")
    public static let closed = Self("closed")
    public static let timeout = Self("timeout")
}

/// Kinds: PosternSystem's `protocolViolation` (the broker, a proxy or the server sent something
/// that violates the protocol), `network` (connect, read or write failed) and `invalidInput` (our
/// own input, a URL or a payload size, is not acceptable), and:
extension SnowflakeError.Kind {
    /// The broker answered, but with a refusal (no proxies, timeout, unknown bridge).
    public static let refused = Self("refused")
}

extension SnowflakeError {
    /// A failure of a stream below (TCP, TLS, a WebSocket, a data channel) as a snowflake error:
    /// snowflake's own errors as they are, the shared wire code's and TransportTLS's with the same
    /// message under the matching snowflake code (a TLS failure is a connection failure, as it
    /// always was here, and a TLS handshake past its deadline a timeout).
    public init(streamFailure error: any Error) {
        if let error = error as? SnowflakeError {
            self = error
        } else if let error = error as? TransportError {
            switch error.code {
            case .tlsHandshakeTimedOut: self.init(code: .timeout, kind: .network, message: error.message)
            default: self.init(code: .connection, kind: .network, message: error.message)
            }
        } else if let error = error as? WireError {
            switch error.code {
            case .timeout: self.init(code: .timeout, kind: .network, message: error.message)
            case .closed: self.init(code: .closed, kind: .network, message: error.message)
            default: self.init(code: .connection, kind: .network, message: error.message)
            }
        } else {
            self.init(code: .connection, kind: .network, message: "\(error)")
        }
    }
}

extension SnowflakeError {
    /// A failure of the shared KCP or smux code as a snowflake error: the same code (raw value),
    /// kind and message, so `TransportError(snowflake:)` still yields `snowflake-kcp-malformed` and
    /// the rest, and log lines read as before the code was shared.
    public init(turboTunnel error: TurboTunnelError) {
        self.init(code: Code(rawValue: error.code.rawValue), kind: Kind(rawValue: error.kind.rawValue), message: error.message)
    }
}
