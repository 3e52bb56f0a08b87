/// The shape every public Postern error has, declared once.
///
/// A public error is `CodedError<Domain>` under its module's name (`typealias TorCoreError =
/// CodedError<TorCoreErrorDomain>`): a struct, never an enum, so new failures never break callers.
/// `code` names the precise failure and `kind` the coarse class a caller branches on; both are open
/// sets of named constants that each module extends (`extension TorCoreError.Code { ... }`).
/// `message` is a sentence for people, already scrubbed of bridge secrets.
public protocol ErrorDomain {
    /// The kind `CodedError(_:_:)` uses when the caller names none.
    static var defaultKind: ErrorKind<Self> { get }
    /// How `description` reads; the message alone unless a domain says otherwise.
    static func describe(code: ErrorCode<Self>, message: String) -> String
}

extension ErrorDomain {
    public static func describe(code: ErrorCode<Self>, message: String) -> String { message }
    public static var defaultKind: ErrorKind<Self> { .failure }
}

/// An open set of failure names for one domain ("not-running", "bad-cert", ...).
public struct ErrorCode<Domain>: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}

/// An open set of coarse failure classes for one domain ("usage", "failure", ...).
public struct ErrorKind<Domain>: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}

/// The kinds more than one domain uses, declared once (a domain adds its own in an extension, as
/// `AppLayerError.Kind.blocked`). Raw values are lowercase words joined by hyphens, like codes.
extension ErrorKind {
    /// The caller asked for something that cannot work (bad option, wrong state).
    public static var usage: Self { Self("usage") }
    /// The network, the peer or the machine failed while doing what was asked.
    public static var failure: Self { Self("failure") }
    /// The input (arguments, a bridge line, a URL, a payload size) is malformed or not acceptable.
    public static var invalidInput: Self { Self("invalid-input") }
    /// The operating system refused or lost a connection.
    public static var network: Self { Self("network") }
    /// The peer sent bytes that violate the protocol (or failed authentication).
    public static var protocolViolation: Self { Self("protocol-violation") }
    /// A deadline passed.
    public static var timeout: Self { Self("timeout") }
}

/// A code, a kind and a message: the one public error struct (see ``ErrorDomain``).
public struct CodedError<Domain: ErrorDomain>: Error, Hashable, Sendable, CustomStringConvertible {
    public typealias Code = ErrorCode<Domain>
    public typealias Kind = ErrorKind<Domain>

    public let code: Code
    public let kind: Kind
    public let message: String

    public init(code: Code, kind: Kind, message: String) {
        self.code = code
        self.kind = kind
        self.message = message
    }

    public init(_ code: Code, kind: Kind = Domain.defaultKind, _ message: String) {
        self.init(code: code, kind: kind, message: message)
    }

    public var description: String { Domain.describe(code: code, message: message) }
}
