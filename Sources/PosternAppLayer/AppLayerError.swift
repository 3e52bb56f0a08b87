import PosternSystem

/// An error from the app layer (activation, proxied HTTP, WebSocket, Nostr, geo directory).
///
/// The shape of every public Postern error (``CodedError``): an extensible ``Code``, a coarse
/// ``Kind`` and a message that never carries a bridge secret.
public typealias AppLayerError = CodedError<AppLayerErrorDomain>

/// Kinds: PosternSystem's `usage` (the input or the caller's request cannot work) and `failure`
/// (the network, the peer or the machine failed), and `blocked` below.
public enum AppLayerErrorDomain: ErrorDomain {}

extension AppLayerError.Code {
    /// Tor is wanted (preference on) and not ready: nothing was sent.
    public static let torNotReady = Self("tor-not-ready")
    /// The connection waited for Tor the maximum number of times and stays closed.
    public static let gaveUpWaitingForTor = Self("gave-up-waiting-for-tor")
    /// The URL cannot be used (no host, a scheme this client does not speak, bytes a URL may not hold).
    public static let invalidURL = Self("invalid-url")
    /// The connection to the SOCKS listener was accepted by another account's socket (the session's
    /// port was taken after it was proven ours): closed before anything was sent.
    public static let socksNotOurs = Self("socks-not-ours")
    /// A .onion destination with the Tor preference off: refused, never resolved.
    public static let onionNeedsTor = Self("onion-needs-tor")
    /// The connection failed below HTTP: SOCKS, TCP, TLS or the relay's stream.
    public static let transport = Self("transport")
    /// The server answered with a status other than success.
    public static let httpStatus = Self("http-status")
    /// The peer sent more than the stated cap (a body, a message, a file).
    public static let tooLarge = Self("too-large")
    /// The peer did not answer within the deadline.
    public static let timedOut = Self("timed-out")
    /// The WebSocket peer broke the protocol (a bad handshake answer or frame).
    public static let webSocketProtocol = Self("websocket-protocol")
    /// The WebSocket connection is closed.
    public static let webSocketClosed = Self("websocket-closed")
    /// The relay directory's CSV does not parse.
    public static let invalidCSV = Self("invalid-csv")
    /// A key, signature or ciphertext is invalid (Nostr, NIP-44).
    public static let crypto = Self("crypto")
    /// A Nostr event or relay message does not parse or verify.
    public static let invalidEvent = Self("invalid-event")
    /// A file (a key, a cache) cannot be read or written.
    public static let filesystem = Self("filesystem")
    /// A system library (libcurl, libsecp256k1) could not be opened or failed.
    public static let libraryFailure = Self("library-failure")
}

extension AppLayerError.Kind {
    /// Fail-closed refusal: Tor is wanted and not available.
    public static let blocked = Self("blocked")
}

/// Something the app layer wants a host application to know (libraries never print).
public struct AppLayerLogEvent: Sendable, Hashable, CustomStringConvertible {
    /// The part that speaks: "relays", "geo", "activation", ...
    public let component: String
    /// What happened, in words; names no bridge.
    public let message: String
    /// An event of `component` saying `message`.
    public init(component: String, message: String) {
        self.component = component
        self.message = message
    }
    public var description: String { "\(component): \(message)" }
}

/// Where the app layer's events go: the host application logs or shows them.
public typealias AppLayerLogger = @Sendable (AppLayerLogEvent) -> Void
