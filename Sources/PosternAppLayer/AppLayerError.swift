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
    public static let invalidURL = Self("invalid-url")
    /// The connection to the SOCKS listener was accepted by another account's socket (the session's
    /// port was taken after it was proven ours): closed before anything was sent.
    public static let socksNotOurs = Self("socks-not-ours")
    /// A .onion destination with the Tor preference off: refused, never resolved.
    public static let onionNeedsTor = Self("onion-needs-tor")
    public static let transport = Self("transport")
    public static let httpStatus = Self("http-status")
    public static let tooLarge = Self("too-large")
    public static let timedOut = Self("timed-out")
    public static let webSocketProtocol = Self("websocket-protocol")
    public static let webSocketClosed = Self("websocket-closed")
    public static let invalidCSV = Self("invalid-csv")
    public static let crypto = Self("crypto")
    public static let invalidEvent = Self("invalid-event")
    public static let filesystem = Self("filesystem")
    public static let libraryFailure = Self("library-failure")
}

extension AppLayerError.Kind {
    /// Fail-closed refusal: Tor is wanted and not available.
    public static let blocked = Self("blocked")
}

/// Something the app layer wants a host application to know (libraries never print).
public struct AppLayerLogEvent: Sendable, Hashable, CustomStringConvertible {
    public let component: String
    public let message: String
    public init(component: String, message: String) {
        self.component = component
        self.message = message
    }
    public var description: String { "\(component): \(message)" }
}

public typealias AppLayerLogger = @Sendable (AppLayerLogEvent) -> Void
