import PosternLinkSpec

/// snowflake's argument rules (snowflake v2.x client/torrc and client/snowflake.go): the one implementation behind
/// both the bridge-line check (PosternLinkSpec's line parser asks for it through the rulebook) and
/// `SnowflakeOptions(arguments:)`, which reads tor's SOCKS arguments at dial time.
///
/// They say what a well-formed snowflake line is, as the reference client reads one; what this
/// client does not support (SQS rendezvous) is refused by `SnowflakeOptions`, not here, so such a
/// line can still be stored for a plugin.
public struct SnowflakeArgumentRules: BridgeArgumentRules {
    public init() {}

    public var transport: TransportName { .snowflake }
    /// The broker picks the bridge by `fingerprint=`; the address is a placeholder.
    public var acceptsHostNameAddress: Bool { true }

    /// The `utls-imitate=` names the reference client knows (lower case).
    public static let utlsNames: Set<String> = [
        "hellorandomizedalpn", "hellorandomizednoalpn",
        "hellofirefox_auto", "hellofirefox_55", "hellofirefox_56", "hellofirefox_63", "hellofirefox_65",
        "hellochrome_auto", "hellochrome_58", "hellochrome_62", "hellochrome_70", "hellochrome_72",
        "helloios_auto", "helloios_11_1", "helloios_12_1",
    ]

    public func review(_ review: inout BridgeArgumentReview) throws(BridgeArgumentProblem) {
        review.warnAboutUnknownKeys(known: ["url", "front", "fronts", "ice", "ampcache", "sqsqueue", "sqscreds", "max",
                                            "fingerprint", "utls-imitate", "utls-nosni", "proxy"])
        if let url = review["url"] { try Self.checkURL(url, key: "url") }
        if let ampcache = review["ampcache"] {
            try Self.checkURL(ampcache, key: "ampcache")
            if review["url"] == nil {
                throw BridgeArgumentProblem(.conflictingArguments, key: "ampcache", "ampcache= needs url= as well")
            }
            // The cache path is built by appending to the URL; a query or fragment would end up
            // in the middle of it.
            guard !ampcache.contains("?"), !ampcache.contains("#") else {
                throw BridgeArgumentProblem(.badURL, key: "ampcache", "ampcache must be a URL without query or fragment")
            }
        }
        if let queue = review["sqsqueue"] {
            try Self.checkURL(queue, key: "sqsqueue")
            if review["sqscreds"] == nil {
                throw BridgeArgumentProblem(.conflictingArguments, key: "sqsqueue", "sqsqueue= needs sqscreds= as well")
            }
            if review["url"] != nil || review["ampcache"] != nil {
                throw BridgeArgumentProblem(.conflictingArguments, key: "sqsqueue", "sqsqueue= cannot be combined with url= or ampcache=")
            }
        } else if review["sqscreds"] != nil {
            throw BridgeArgumentProblem(.conflictingArguments, key: "sqscreds", "sqscreds= needs sqsqueue= as well")
        }
        if review["url"] == nil && review["sqsqueue"] == nil {
            throw BridgeArgumentProblem(.missingURL, key: "url", "a snowflake bridge needs url= (the broker) or sqsqueue=")
        }
        for key in ["fronts", "front"] {
            guard let value = review[key] else { continue }
            // An empty fronts= is meaningful (it disables front=); empty entries are not.
            if value.isEmpty && key == "fronts" { continue }
            // The client dials a front as the URL host, so an IPv4 literal is as good as a name
            // (no SNI is sent for it).
            guard value.split(separator: ",", omittingEmptySubsequences: false)
                .allSatisfy({ BridgeArgumentSyntax.isHostName($0) || BridgeArgumentSyntax.isIPv4Address($0) }) else {
                throw BridgeArgumentProblem(.badFront, key: key, "\(key) must be a comma-separated list of domain names or IPv4 addresses")
            }
        }
        if let ice = review["ice"] {
            var ignored = 0
            for entry in ice.split(separator: ",", omittingEmptySubsequences: false) {
                let lower = entry.lowercased()
                if lower.hasPrefix("stun:") {
                    guard BridgeArgumentSyntax.isHostAndOptionalPort(lower.dropFirst(5)) else {
                        throw BridgeArgumentProblem(.badICE, key: "ice", "each stun: server must be stun:host or stun:host:port")
                    }
                } else if entry.isEmpty || !entry.contains(":") {
                    throw BridgeArgumentProblem(.badICE, key: "ice", "ice must be a comma-separated list of ICE server URLs such as stun:host:3478")
                } else {
                    ignored += 1
                }
            }
            if ignored > 0 {
                review.warn(.ignoredICEServer, key: "ice", "snowflake uses only stun: servers; \(ignored) other \(ignored == 1 ? "entry is" : "entries are") ignored")
            }
        }
        if let max = review["max"] {
            guard let value = Int(max) else {
                throw BridgeArgumentProblem(.badMax, key: "max", "max must be a whole number (the number of snowflake proxies to keep)")
            }
            if value < 1 { review.warn(.maxBelowOne, key: "max", "max below 1 is treated as 1") }
        }
        if let inner = review["fingerprint"] {
            guard let innerFingerprint = Fingerprint(inner) else {
                throw BridgeArgumentProblem(.badFingerprint, key: "fingerprint", "a fingerprint is 40 hexadecimal characters")
            }
            if let fingerprint = review.fingerprint, fingerprint != innerFingerprint {
                throw BridgeArgumentProblem(.fingerprintMismatch, key: "fingerprint",
                                            "differs from the bridge's own fingerprint (the word after the address); the broker would pick a different bridge than tor expects")
            }
        }
        if let name = review["utls-imitate"], !Self.utlsNames.contains(name.lowercased()) {
            throw BridgeArgumentProblem(.badUTLS, key: "utls-imitate", "not a uTLS ClientHello name snowflake knows (for example hellorandomizedalpn)")
        }
        if let flag = review["utls-nosni"], !["true", "yes", "false", "no"].contains(flag.lowercased()) {
            throw BridgeArgumentProblem(.badBoolean, key: "utls-nosni", "utls-nosni must be true, yes, false or no")
        }
    }

    private static func checkURL(_ value: String, key: String) throws(BridgeArgumentProblem) {
        guard BridgeArgumentSyntax.isHTTPURL(value) else {
            throw BridgeArgumentProblem(.badURL, key: key, "\(key) must be an http:// or https:// URL with a host")
        }
    }
}
