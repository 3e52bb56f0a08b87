/// An error of the trial runner or of reading and writing its results.
///
/// A struct with an extensible ``Code``, a human-readable message and a coarse ``Kind``, like the
/// other modules' errors: new codes can be added without breaking callers.
public struct TrialError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A probe URL or other input that cannot work.
        public static let invalidInput = Code("invalid-input")
        /// A file or directory could not be created, read or replaced.
        public static let filesystem = Code("filesystem")
        /// A child process could not be started.
        public static let spawn = Code("spawn")
        /// A saved result could not be decoded.
        public static let badResult = Code("bad-result")
    }

    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The caller asked for something that cannot work.
        public static let usage = Kind("usage")
        /// The machine failed while doing what was asked.
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
