/// An error from the app layer (activation, proxied HTTP, WebSocket, Nostr, geo directory).
///
/// Same shape as ``TorCoreError``: an extensible ``Code``, a coarse ``Kind`` and a message that
/// never carries a bridge secret.
public struct AppLayerError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Tor is wanted (preference on) and not ready: nothing was sent.
        public static let torNotReady = Code("tor-not-ready")
        /// The connection waited for Tor the maximum number of times and stays closed.
        public static let gaveUpWaitingForTor = Code("gave-up-waiting-for-tor")
        public static let invalidURL = Code("invalid-url")
        /// A .onion destination with the Tor preference off: refused, never resolved.
        public static let onionNeedsTor = Code("onion-needs-tor")
        public static let transport = Code("transport")
        public static let httpStatus = Code("http-status")
        public static let tooLarge = Code("too-large")
        public static let timedOut = Code("timed-out")
        public static let webSocketProtocol = Code("websocket-protocol")
        public static let webSocketClosed = Code("websocket-closed")
        public static let invalidCSV = Code("invalid-csv")
        public static let crypto = Code("crypto")
        public static let invalidEvent = Code("invalid-event")
        public static let filesystem = Code("filesystem")
        public static let libraryFailure = Code("library-failure")
    }

    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The input or the caller's request cannot work.
        public static let usage = Kind("usage")
        /// The network, the peer or the machine failed.
        public static let failure = Kind("failure")
        /// Fail-closed refusal: Tor is wanted and not available.
        public static let blocked = Kind("blocked")
    }

    public var code: Code
    public var kind: Kind
    public var message: String

    public init(_ code: Code, kind: Kind = .failure, _ message: String) {
        self.code = code
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
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
