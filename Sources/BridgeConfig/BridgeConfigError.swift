import PosternSystem

/// The one public error type of BridgeConfig.
///
/// It is a struct rather than an enum so that new codes can be added without breaking callers:
/// match on `code` (an open set of named constants) and show `message` to the user. Messages never
/// contain a bridge address, fingerprint, cert or URL unless the caller asked for unsafe logging.
///
/// Codes and kinds are PosternSystem's open name sets, as in every public Postern error
/// (``CodedError``); this one is its own struct because it also says where in a paste it is.
public struct BridgeConfigError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, as a stable machine-readable name.
    public typealias Code = ErrorCode<BridgeConfigError>
    /// The broad class of the failure, for callers that only need to decide how to react
    /// (for example: exit status 64 for `invalidInput`, 1 for `storage`).
    public typealias Kind = ErrorKind<BridgeConfigError>

    public let code: Code
    public let kind: Kind
    /// A complete, human-readable sentence, already scrubbed according to the logging policy.
    public let message: String
    /// Where in a paste the problem is, when the error comes from `BridgePaste`.
    public let location: PasteLocation?
    /// The 1-based position of the offending word in the bridge line (after any `Bridge` prefix).
    public let word: Int?

    public init(code: Code, kind: Kind, message: String, location: PasteLocation? = nil, word: Int? = nil) {
        self.code = code
        self.kind = kind
        self.message = message
        self.location = location
        self.word = word
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

    public var description: String { message }

    func located(at location: PasteLocation) -> BridgeConfigDiagnostic {
        BridgeConfigDiagnostic(code: code, message: "\(location): \(message)", location: location)
    }
}

extension BridgeConfigError.Code {
    // Bridge-line syntax.
    public static let emptyLine = Self("empty-line")
    public static let badCharacter = Self("bad-character")
    public static let badTransportName = Self("bad-transport-name")
    public static let missingAddress = Self("missing-address")
    public static let badAddress = Self("bad-address")
    public static let badPort = Self("bad-port")
    public static let unbracketedIPv6 = Self("unbracketed-ipv6")
    public static let hostNameNotAllowed = Self("host-name-not-allowed")
    public static let badFingerprint = Self("bad-fingerprint")
    public static let badArgument = Self("bad-argument")
    public static let duplicateArgument = Self("duplicate-argument")
    public static let argumentsTooLong = Self("arguments-too-long")
    public static let argumentsWithoutTransport = Self("arguments-without-transport")
    // Per-transport arguments.
    public static let badCert = Self("bad-cert")
    public static let missingCert = Self("missing-cert")
    public static let badIATMode = Self("bad-iat-mode")
    public static let missingIATMode = Self("missing-iat-mode")
    public static let badNodeID = Self("bad-node-id")
    public static let badPublicKey = Self("bad-public-key")
    public static let badURL = Self("bad-url")
    public static let missingURL = Self("missing-url")
    public static let badFront = Self("bad-front")
    public static let badICE = Self("bad-ice")
    public static let badMax = Self("bad-max")
    public static let fingerprintMismatch = Self("fingerprint-mismatch")
    public static let badUTLS = Self("bad-utls")
    public static let badBoolean = Self("bad-boolean")
    public static let conflictingArguments = Self("conflicting-arguments")
    public static let badServerName = Self("bad-server-name")
    // Paste-level.
    public static let badJSON = Self("bad-json")
    public static let duplicateLine = Self("duplicate-line")
    // Warnings and notes.
    public static let unknownTransport = Self("unknown-transport")
    public static let unknownArgument = Self("unknown-argument")
    public static let hostNameAddress = Self("host-name-address")
    public static let defaultPort = Self("default-port")
    public static let ignoredICEServer = Self("ignored-ice-server")
    public static let certPaddingRemoved = Self("cert-padding-removed")
    public static let maxBelowOne = Self("max-below-one")
    public static let legacyKeysIgnored = Self("legacy-keys-ignored")
    public static let unusedArgument = Self("unused-argument")
    public static let transportNameNormalized = Self("transport-name-normalized")
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
