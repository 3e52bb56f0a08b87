import PosternLinkSpec
import PosternSystem

/// The one public error type of BridgeConfig.
///
/// It is a struct rather than an enum so that new codes can be added without breaking callers:
/// match on `code` (an open set of named constants) and show `message` to the user. Messages never
/// contain a bridge address, fingerprint, cert or URL unless the caller asked for unsafe logging.
///
/// Codes and kinds are PosternSystem's open name sets, as in every public Postern error
/// (``CodedError``); this one is its own struct because it also says where in a paste it is. They
/// are one set with PosternLinkSpec's ``BridgeLineError`` (whose codes name what is wrong with a
/// line), so a line's problem keeps its code when a paste or the store reports it.
public struct BridgeConfigError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, as a stable machine-readable name.
    public typealias Code = BridgeLineError.Code
    /// The broad class of the failure, for callers that only need to decide how to react
    /// (for example: exit status 64 for `invalidInput`, 1 for `storage`).
    public typealias Kind = BridgeLineError.Kind

    public let code: Code
    public let kind: Kind
    /// A complete, human-readable sentence, already scrubbed according to the logging policy.
    public let message: String
    /// Where in a paste the problem is, when the error comes from `BridgePaste`.
    public let location: PasteLocation?
    /// The 1-based position of the offending word in the bridge line, counting a leading `Bridge`
    /// keyword (as the user sees the line).
    public let word: Int?

    public init(code: Code, kind: Kind, message: String, location: PasteLocation? = nil, word: Int? = nil) {
        self.code = code
        self.kind = kind
        self.message = message
        self.location = location
        self.word = word
    }

    /// A bridge line's error (its code, kind, message and word unchanged), not yet located in a paste.
    public init(_ error: BridgeLineError) {
        self.init(code: error.code, kind: error.kind, message: error.message, word: error.word)
    }

    public var description: String { message }

    /// The same error, with the paste location put in front of the message.
    func located(at location: PasteLocation) -> BridgeConfigError {
        BridgeConfigError(code: code, kind: kind, message: "\(location): \(message)", location: location, word: word)
    }
}

/// Kinds: PosternSystem's `invalidInput` (a bridge line, a relay address, a transport name is
/// malformed), and:
extension BridgeConfigError.Kind {
    /// The request is well formed but conflicts with what is stored (duplicate, unknown ID).
    public static let conflict = Self("conflict")
    /// A configured limit would be exceeded.
    public static let limit = Self("limit")
    /// Reading or writing the configuration store failed.
    public static let storage = Self("storage")
}

/// A non-fatal remark about the input: a warning (something the user should probably look at) or a
/// note (something that was deliberately skipped). Scrubbed like `BridgeConfigError`.
public struct BridgeConfigDiagnostic: Hashable, Sendable, CustomStringConvertible {
    public let code: BridgeConfigError.Code
    public let message: String
    public let location: PasteLocation?

    public init(code: BridgeConfigError.Code, message: String, location: PasteLocation? = nil) {
        self.code = code
        self.message = message
        self.location = location
    }

    /// A bridge line's warning, not yet located in a paste.
    public init(_ warning: BridgeLineWarning) {
        self.init(code: warning.code, message: warning.message)
    }

    public var description: String { message }

    func located(at location: PasteLocation) -> BridgeConfigDiagnostic {
        BridgeConfigDiagnostic(code: code, message: "\(location): \(message)", location: location)
    }
}

extension BridgeConfigError.Code {
    // Paste-level.
    public static let badJSON = Self("bad-json")
    public static let duplicateLine = Self("duplicate-line")
    // Notes about a paste.
    public static let torrcOptionIgnored = Self("torrc-option-ignored")
    public static let builtinBridge = Self("builtin-bridge")
    // Store.
    public static let storeUnreadable = Self("store-unreadable")
    public static let storeCorrupt = Self("store-corrupt")
    public static let storeNewerVersion = Self("store-newer-version")
    public static let storeWriteFailed = Self("store-write-failed")
    public static let storeLockFailed = Self("store-lock-failed")
    public static let noConfigDirectory = Self("no-config-directory")
    public static let tooManyBridges = Self("too-many-bridges")
    public static let unknownBridgeID = Self("unknown-bridge-id")
    public static let badTransportSelection = Self("bad-transport-selection")
    // Relays.
    public static let malformedRelay = Self("malformed-relay")
    public static let duplicateRelay = Self("duplicate-relay")
    public static let tooManyRelays = Self("too-many-relays")
    public static let unknownRelay = Self("unknown-relay")
    // Rendering.
    public static let noBridgesForTransport = Self("no-bridges-for-transport")
    public static let missingTransportPort = Self("missing-transport-port")
    public static let addressCollision = Self("address-collision")
    public static let builtinsUnavailable = Self("builtins-unavailable")
}
