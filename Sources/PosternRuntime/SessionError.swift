import PosternSystem

/// An error from a Postern session: settings that cannot make a route, a store that cannot be
/// read, a transport that cannot start, tor refusing to start. The shape of every public Postern
/// error (``CodedError``); its message never holds a bridge address, fingerprint or cert.
/// ``Kind``: `usage` when the caller's input cannot work, `failure` otherwise.
public typealias SessionError = CodedError<SessionErrorDomain>

/// The domain of ``SessionError``'s codes and kinds.
public enum SessionErrorDomain: ErrorDomain {}

extension SessionError.Code {
    /// The Tor preference is off in the settings: nothing starts.
    public static let torTurnedOff = Self("tor-turned-off")
    /// The chosen transport has no enabled bridges (and no built-in ones).
    public static let noBridges = Self("no-bridges")
    /// The bridges cannot be rendered for tor (mixed or invalid lines).
    public static let invalidBridges = Self("invalid-bridges")
    /// The settings store (or connection assist's files) could not be read or written.
    public static let store = Self("store")
    /// A transport's in-process listener could not start.
    public static let transport = Self("transport")
    /// The embedded tor did not start.
    public static let torDidNotStart = Self("tor-did-not-start")
    /// A file the session was asked to write (events log, status file) cannot be opened.
    public static let file = Self("file")
    /// A status file names a live process that cannot be proven to be our `postern run` (its SOCKS
    /// listener is not that process's, or not ours): nothing attaches to it.
    public static let unprovenSession = Self("unproven-session")
    /// The session was used after ``PosternSession/stop()``.
    public static let stopped = Self("stopped")
}
