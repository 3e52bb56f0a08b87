import PosternSystem

/// An error of the trial runner or of reading and writing its results: the shape of every public
/// Postern error (``CodedError``), an extensible ``Code``, a coarse ``Kind`` and a message.
public typealias TrialError = CodedError<TrialErrorDomain>

/// Kinds: PosternSystem's `usage` (the caller asked for something that cannot work) and `failure`
/// (the machine failed while doing what was asked).
public enum TrialErrorDomain: ErrorDomain {}

extension TrialError.Code {
    /// A probe URL or other input that cannot work.
    public static let invalidInput = Self("invalid-input")
    /// A file or directory could not be created, read or replaced.
    public static let filesystem = Self("filesystem")
    /// A child process could not be started.
    public static let spawn = Self("spawn")
    /// A saved result could not be decoded.
    public static let badResult = Self("bad-result")
}
