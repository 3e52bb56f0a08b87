/// An error from the embedded tor core or its control connection.
///
/// A struct with an extensible ``Code`` (new codes can be added without breaking callers), a
/// human-readable message and a coarse ``Kind`` that tells a caller how to react.
public struct TorCoreError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let alreadyRunning = Code("already-running")
        public static let ffiFailure = Code("ffi-failure")
        public static let controlClosed = Code("control-closed")
        public static let controlProtocol = Code("control-protocol")
        public static let commandRejected = Code("command-rejected")
        public static let invalidConfiguration = Code("invalid-configuration")
        public static let torExited = Code("tor-exited")
        public static let notRunning = Code("not-running")
        public static let timedOut = Code("timed-out")
        public static let filesystem = Code("filesystem")
    }

    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The caller asked for something that cannot work (bad option, wrong state).
        public static let usage = Kind("usage")
        /// Tor or the machine failed while doing what was asked.
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
