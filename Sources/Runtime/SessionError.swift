/// An error from a Postern session: settings that cannot make a route, a store that cannot be
/// read, a transport that cannot start, tor refusing to start.
///
/// A struct with an extensible ``Code``, a message (never a bridge address, fingerprint or cert)
/// and a coarse ``Kind``: `usage` when the caller's input cannot work, `failure` otherwise.
public struct SessionError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The Tor preference is off in the settings: nothing starts.
        public static let torTurnedOff = Code("tor-turned-off")
        /// The chosen transport has no enabled bridges (and no built-in ones).
        public static let noBridges = Code("no-bridges")
        /// The bridges cannot be rendered for tor (mixed or invalid lines).
        public static let invalidBridges = Code("invalid-bridges")
        /// The settings store (or connection assist's files) could not be read or written.
        public static let store = Code("store")
        /// A transport's in-process listener could not start.
        public static let transport = Code("transport")
        /// The embedded tor did not start.
        public static let torDidNotStart = Code("tor-did-not-start")
        /// A file the session was asked to write (events log, status file) cannot be opened.
        public static let file = Code("file")
        /// The session was used after ``PosternSession/stop()``.
        public static let stopped = Code("stopped")
    }

    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let usage = Kind("usage")
        public static let failure = Kind("failure")
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

extension Duration {
    /// The duration in seconds, for rendering and JSON.
    public var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
