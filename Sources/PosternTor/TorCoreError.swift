import PosternSystem

/// An error from the embedded tor core or its control connection: the shape of every public
/// Postern error (``CodedError``), an extensible ``Code``, a coarse ``Kind`` and a message.
public typealias TorCoreError = CodedError<TorCoreErrorDomain>

/// Kinds: PosternSystem's `usage` (the caller asked for something that cannot work: a bad
/// option, the wrong state) and `failure` (tor or the machine failed while doing what was asked).
public enum TorCoreErrorDomain: ErrorDomain {}

extension TorCoreError.Code {
    public static let alreadyRunning = Self("already-running")
    public static let ffiFailure = Self("ffi-failure")
    public static let controlClosed = Self("control-closed")
    public static let controlProtocol = Self("control-protocol")
    public static let commandRejected = Self("command-rejected")
    public static let invalidConfiguration = Self("invalid-configuration")
    public static let torExited = Self("tor-exited")
    public static let notRunning = Self("not-running")
    public static let timedOut = Self("timed-out")
    public static let filesystem = Self("filesystem")
}
