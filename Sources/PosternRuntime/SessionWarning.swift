/// Something the session could not do that does not stop it.
public struct SessionWarning: Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, as a stable name (new codes may be added).
    public struct Code: Hashable, Sendable {
        /// The code as written in logs and JSON, e.g. "settings-not-applied".
        public let rawValue: String
        /// The code named `rawValue`.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        /// The route that reached 100% could not be written to the state directory (it is not tried first next time).
        public static let cannotRememberRoute = Code("cannot-remember-route")
        /// Connection assist's per-network memory could not be written to the state directory.
        public static let cannotUpdateAssistMemory = Code("cannot-update-assist-memory")
        /// Changed settings could not be applied; the session keeps the previous ones.
        public static let settingsNotApplied = Code("settings-not-applied")
        /// A fixed route (no connection assist) met an error that cannot change by waiting (a
        /// certificate that was not trusted): the session reports it and ``PosternSession/serve(until:reloadRequested:)``
        /// returns as for a failure, rather than let tor retry the route for its whole window.
        public static let routeCannotWork = Code("route-cannot-work")
    }

    /// What went wrong.
    public var code: Code
    /// What went wrong, for people; names no bridge.
    public var message: String
    /// A warning with `code` and `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
    public var description: String { message }
}
