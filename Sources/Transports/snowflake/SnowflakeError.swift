/// The one public error type of the snowflake transport.
///
/// A struct with open sets of codes and kinds, so that new failures can be added without breaking
/// callers. Messages never contain a broker URL, front, bridge fingerprint or SDP.
public struct SnowflakeError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let encapsulationTooLong = Code("encapsulation-too-long")
        public static let kcpMalformed = Code("kcp-malformed")
        public static let kcpWrongConversation = Code("kcp-wrong-conversation")
        public static let smuxMalformed = Code("smux-malformed")
        public static let smuxWrongVersion = Code("smux-wrong-version")
        /// The peer sent more stream data than the window we granted (bytes tor has not read yet).
        public static let smuxWindowExceeded = Code("smux-window-exceeded")
        /// The proxy sent data-channel messages faster than the session takes them, past the cap.
        public static let dataChannelFlood = Code("data-channel-flood")
        /// A WebSocket frame longer than the cap (or with an impossible length).
        public static let webSocketFrameTooLarge = Code("websocket-frame-too-large")
        public static let brokerMessageMalformed = Code("broker-message-malformed")
        public static let brokerError = Code("broker-error")
        public static let brokerHTTP = Code("broker-http")
        public static let brokerURL = Code("broker-url")
        public static let ampArmor = Code("amp-armor")
        public static let responseTooLarge = Code("response-too-large")
        public static let connection = Code("connection")
        public static let unsupported = Code("unsupported")
        public static let closed = Code("closed")
        public static let timeout = Code("timeout")
    }

    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The peer (broker, proxy, server) sent something that violates the protocol.
        public static let protocolViolation = Kind("protocol violation")
        /// The broker answered, but with a refusal (no proxies, timeout, unknown bridge).
        public static let refused = Kind("refused")
        /// The network failed: connect, read or write.
        public static let network = Kind("network")
        /// Our own input (a URL, a payload size) is not acceptable.
        public static let invalidInput = Kind("invalid input")
    }

    public let code: Code
    public let kind: Kind
    public let message: String

    public init(code: Code, kind: Kind, message: String) {
        self.code = code
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
