import PosternSystem

/// The one public error type of PosternLinkSpec: a bridge line, a transport name, an address, a
/// fingerprint or a transport's arguments are malformed.
///
/// Codes and kinds are PosternSystem's open name sets, as in every public Postern error
/// (``CodedError``); this one is its own struct because it also says which word of a bridge line
/// is wrong. BridgeConfig's `BridgeConfigError` shares its codes and kinds, so a paste or the store
/// reports a line's problem under the code the parser gave it. Messages never contain a bridge
/// address, fingerprint, cert or URL unless the caller asked for unsafe logging.
public struct BridgeLineError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, as a stable machine-readable name.
    public typealias Code = ErrorCode<BridgeLineError>
    /// The broad class of the failure; always PosternSystem's `invalidInput` for this type's own
    /// errors (BridgeConfig adds kinds for the store).
    public typealias Kind = ErrorKind<BridgeLineError>

    public let code: Code
    public let kind: Kind
    /// A complete, human-readable sentence, already scrubbed according to the logging policy.
    public let message: String
    /// The 1-based position of the offending word in the bridge line, counting a leading `Bridge`
    /// keyword (as the user sees the line).
    public let word: Int?

    public init(code: Code, kind: Kind, message: String, word: Int? = nil) {
        self.code = code
        self.kind = kind
        self.message = message
        self.word = word
    }

    public var description: String { message }
}

extension BridgeLineError.Code {
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
    // Per-transport arguments (the transports' `BridgeArgumentRules`).
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
    /// dnstt: no `doh=`, `dot=` or `udp=`.
    public static let missingResolver = Self("missing-resolver")
    /// dnstt: a `dot=` or `udp=` that is not `host:port`.
    public static let badResolver = Self("bad-resolver")
    /// dnstt: no `pubkey=`.
    public static let missingPublicKey = Self("missing-public-key")
    /// dnstt: no `domain=`.
    public static let missingDomain = Self("missing-domain")
    /// dnstt: a `domain=` that is not a domain name, or too long to leave room for packets.
    public static let badDomain = Self("bad-domain")
    // Warnings about a line (``BridgeLineWarning``).
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
}
