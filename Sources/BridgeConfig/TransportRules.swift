import PosternSystem

/// Per-transport argument rules, from the specs in docs/specs (obfs4.md §1, snowflake.md §2 and §11,
/// other-transports.md §1–2). Lines for transports Postern does not know are accepted with a warning
/// and their arguments are not checked.
struct ArgumentChecker {
    let transport: TransportName
    let fingerprint: Fingerprint?
    var arguments: BridgeArguments
    let wordOfKey: [String: Int]
    let words: [String]
    let logging: LoggingPolicy
    let wordOffset: Int
    var warnings: [BridgeConfigDiagnostic] = []

    init(transport: TransportName, fingerprint: Fingerprint?, arguments: BridgeArguments,
         wordOfKey: [String: Int], words: [String], logging: LoggingPolicy, wordOffset: Int) {
        self.wordOffset = wordOffset
        self.transport = transport
        self.fingerprint = fingerprint
        self.arguments = arguments
        self.wordOfKey = wordOfKey
        self.words = words
        self.logging = logging
    }

    private func label(_ key: String) -> String {
        guard let word = wordOfKey[key] else { return key }
        return WordLabel(logging: logging, offset: wordOffset)(word, isPrintableKey(key) ? key : "argument", words[word - 1])
    }

    private func fail(_ code: BridgeConfigError.Code, key: String?, _ reason: String) -> BridgeConfigError {
        let prefix = key.map { label($0) + ": " } ?? ""
        return BridgeConfigError(code: code, kind: .invalidInput, message: prefix + reason,
                                 word: key.flatMap { wordOfKey[$0] }.map { $0 + wordOffset })
    }

    private mutating func warn(_ code: BridgeConfigError.Code, key: String?, _ reason: String) {
        let prefix = key.map { label($0) + ": " } ?? ""
        warnings.append(BridgeConfigDiagnostic(code: code, message: prefix + reason))
    }

    mutating func check() throws(BridgeConfigError) {
        switch transport {
        case .vanilla: return
        case .obfs4: try checkObfs4()
        case .snowflake: try checkSnowflake()
        case .meekLite: try checkMeekLite()
        case .webtunnel: try checkWebtunnel()
        default:
            warn(.unknownTransport, key: nil,
                 "the transport \(transport.description(policy: logging)) is not one Postern knows; its arguments were not checked and it needs a transport plugin of that name")
        }
    }

    private mutating func warnAboutUnknownKeys(known: Set<String>) {
        for key in arguments.keys where !known.contains(key) {
            warn(.unknownArgument, key: key, "\(transport) does not use this argument; it is kept and passed on")
        }
    }

    // MARK: obfs4

    private mutating func checkObfs4() throws(BridgeConfigError) {
        warnAboutUnknownKeys(known: ["cert", "iat-mode", "node-id", "public-key"])
        if let cert = arguments["cert"] {
            // Go's decoder rejects a cert that still carries `==` and gets another `==` added, so
            // tolerate padding here and store the canonical unpadded form.
            var body = Substring(cert)
            while body.hasSuffix("=") { body = body.dropLast() }
            guard body.utf8.count == 70, let decoded = decodeBase64(body), decoded.count == 52 else {
                throw fail(.badCert, key: "cert", "an obfs4 cert is 70 characters of base64 that decode to 52 bytes")
            }
            if body.utf8.count != cert.utf8.count { arguments.replaceValue(forKey: "cert", with: String(body)) }
            if arguments["node-id"] != nil || arguments["public-key"] != nil {
                warn(.legacyKeysIgnored, key: nil, "the line has cert= and also the older node-id=/public-key=; obfs4 uses cert")
            }
        } else {
            guard let nodeID = arguments["node-id"], let publicKey = arguments["public-key"] else {
                throw fail(.missingCert, key: nil, "an obfs4 bridge needs cert= (or the older node-id= and public-key=)")
            }
            guard nodeID.utf8.count == 40, nodeID.utf8.allSatisfy(isHexDigit) else {
                throw fail(.badNodeID, key: "node-id", "node-id is 40 hexadecimal characters")
            }
            guard publicKey.utf8.count == 64, publicKey.utf8.allSatisfy(isHexDigit) else {
                throw fail(.badPublicKey, key: "public-key", "public-key is 64 hexadecimal characters")
            }
        }
        guard let iatMode = arguments["iat-mode"] else {
            throw fail(.missingIATMode, key: nil, "an obfs4 bridge needs iat-mode=0, 1 or 2 (the obfs4 client refuses a line without it)")
        }
        guard ["0", "1", "2"].contains(iatMode) else {
            throw fail(.badIATMode, key: "iat-mode", "iat-mode must be 0, 1 or 2")
        }
    }

    // MARK: snowflake

    private static let snowflakeUTLSNames: Set<String> = [
        "hellorandomizedalpn", "hellorandomizednoalpn",
        "hellofirefox_auto", "hellofirefox_55", "hellofirefox_56", "hellofirefox_63", "hellofirefox_65",
        "hellochrome_auto", "hellochrome_58", "hellochrome_62", "hellochrome_70", "hellochrome_72",
        "helloios_auto", "helloios_11_1", "helloios_12_1",
    ]

    private mutating func checkSnowflake() throws(BridgeConfigError) {
        warnAboutUnknownKeys(known: ["url", "front", "fronts", "ice", "ampcache", "sqsqueue", "sqscreds", "max",
                                     "fingerprint", "utls-imitate", "utls-nosni", "proxy"])
        if let url = arguments["url"] { try checkURL(url, key: "url") }
        if let ampcache = arguments["ampcache"] {
            try checkURL(ampcache, key: "ampcache")
            if arguments["url"] == nil {
                throw fail(.conflictingArguments, key: "ampcache", "ampcache= needs url= as well")
            }
        }
        if let queue = arguments["sqsqueue"] {
            try checkURL(queue, key: "sqsqueue")
            if arguments["sqscreds"] == nil {
                throw fail(.conflictingArguments, key: "sqsqueue", "sqsqueue= needs sqscreds= as well")
            }
            if arguments["url"] != nil || arguments["ampcache"] != nil {
                throw fail(.conflictingArguments, key: "sqsqueue", "sqsqueue= cannot be combined with url= or ampcache=")
            }
        } else if arguments["sqscreds"] != nil {
            throw fail(.conflictingArguments, key: "sqscreds", "sqscreds= needs sqsqueue= as well")
        }
        if arguments["url"] == nil && arguments["sqsqueue"] == nil {
            throw fail(.missingURL, key: nil, "a snowflake bridge needs url= (the broker) or sqsqueue=")
        }
        for key in ["fronts", "front"] {
            guard let value = arguments[key] else { continue }
            // An empty fronts= is meaningful (it disables front=); empty entries are not.
            if value.isEmpty && key == "fronts" { continue }
            // The client dials a front as the URL host, so an IPv4 literal is as good as a name
            // (no SNI is sent for it).
            guard value.split(separator: ",", omittingEmptySubsequences: false)
                .allSatisfy({ isValidHostName($0) || BridgeAddress.canonicalIPv4($0) == String($0) }) else {
                throw fail(.badFront, key: key, "\(key) must be a comma-separated list of domain names or IPv4 addresses")
            }
        }
        if let ice = arguments["ice"] {
            var ignored = 0
            for entry in ice.split(separator: ",", omittingEmptySubsequences: false) {
                let lower = entry.lowercased()
                if lower.hasPrefix("stun:") {
                    guard isValidHostAndOptionalPort(lower.dropFirst(5)) else {
                        throw fail(.badICE, key: "ice", "each stun: server must be stun:host or stun:host:port")
                    }
                } else if entry.isEmpty || !entry.contains(":") {
                    throw fail(.badICE, key: "ice", "ice must be a comma-separated list of ICE server URLs such as stun:host:3478")
                } else {
                    ignored += 1
                }
            }
            if ignored > 0 {
                warn(.ignoredICEServer, key: "ice", "snowflake uses only stun: servers; \(ignored) other \(ignored == 1 ? "entry is" : "entries are") ignored")
            }
        }
        if let max = arguments["max"] {
            guard let value = Int(max) else {
                throw fail(.badMax, key: "max", "max must be a whole number (the number of snowflake proxies to keep)")
            }
            if value < 1 { warn(.maxBelowOne, key: "max", "max below 1 is treated as 1") }
        }
        if let inner = arguments["fingerprint"] {
            guard let innerFingerprint = Fingerprint(inner) else {
                throw fail(.badFingerprint, key: "fingerprint", "a fingerprint is 40 hexadecimal characters")
            }
            if let fingerprint, fingerprint != innerFingerprint {
                throw fail(.fingerprintMismatch, key: "fingerprint",
                           "differs from the bridge's own fingerprint (the word after the address); the broker would pick a different bridge than tor expects")
            }
        }
        if let name = arguments["utls-imitate"], !Self.snowflakeUTLSNames.contains(name.lowercased()) {
            throw fail(.badUTLS, key: "utls-imitate", "not a uTLS ClientHello name snowflake knows (for example hellorandomizedalpn)")
        }
        if let flag = arguments["utls-nosni"], !["true", "yes", "false", "no"].contains(flag.lowercased()) {
            throw fail(.badBoolean, key: "utls-nosni", "utls-nosni must be true, yes, false or no")
        }
    }

    // MARK: meek_lite

    private mutating func checkMeekLite() throws(BridgeConfigError) {
        warnAboutUnknownKeys(known: ["url", "front", "utls"])
        guard let url = arguments["url"] else {
            throw fail(.missingURL, key: nil, "a meek_lite bridge needs url= (the meek server)")
        }
        try checkURL(url, key: "url")
        if let front = arguments["front"], !isValidHostName(front) {
            throw fail(.badFront, key: "front", "front must be a domain name")
        }
        if let name = arguments["utls"] {
            guard isLyrebirdUTLSName(name, allowEmpty: false) else {
                throw fail(.badUTLS, key: "utls", "not a uTLS ClientHello name lyrebird knows (for example HelloRandomizedALPN, or none)")
            }
        }
    }

    // MARK: webtunnel

    private mutating func checkWebtunnel() throws(BridgeConfigError) {
        warnAboutUnknownKeys(known: ["url", "ver", "servername", "utls", "addr"])
        guard let url = arguments["url"] else {
            throw fail(.missingURL, key: nil, "a webtunnel bridge needs url= (the https address with the secret path)")
        }
        try checkURL(url, key: "url")
        if let serverName = arguments["servername"], !isValidHostName(serverName) {
            throw fail(.badServerName, key: "servername", "servername must be a domain name")
        }
        if let name = arguments["utls"], !isLyrebirdUTLSName(name, allowEmpty: true) {
            throw fail(.badUTLS, key: "utls", "not a uTLS ClientHello name lyrebird knows (for example hellorandomizedalpn, or none)")
        }
        if arguments["addr"] != nil {
            warn(.unusedArgument, key: "addr", "the webtunnel client (lyrebird 0.5) does not read addr=; it connects to the url= host")
        }
    }

    // MARK: shared checks

    private func checkURL(_ value: String, key: String) throws(BridgeConfigError) {
        guard isHTTPURL(value) else {
            throw fail(.badURL, key: key, "\(key) must be an http:// or https:// URL with a host")
        }
    }

    private func isLyrebirdUTLSName(_ name: String, allowEmpty: Bool) -> Bool {
        let lower = name.lowercased()
        if lower.isEmpty { return allowEmpty }
        if ["none", "hellorandomized", "hellorandomizedalpn", "hellorandomizednoalpn", "helloandroid_11"].contains(lower) { return true }
        for family in ["hellochrome_", "hellofirefox_", "helloios_", "helloedge_", "hellosafari_", "hello360_", "helloqq_"]
        where lower.hasPrefix(family) {
            let rest = lower.dropFirst(family.count)
            return !rest.isEmpty && rest.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == UInt8(ascii: "_") }
        }
        return false
    }
}

/// `http://` or `https://` (any case), a host (name, IPv4 or bracketed IPv6), an optional port,
/// then anything. No user info.
func isHTTPURL(_ text: String) -> Bool {
    let lower = text.lowercased()
    let rest: Substring
    if lower.hasPrefix("https://") {
        rest = text.dropFirst(8)
    } else if lower.hasPrefix("http://") {
        rest = text.dropFirst(7)
    } else {
        return false
    }
    let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    guard !authority.contains("@") else { return false }
    return isValidHostAndOptionalPort(authority)
}

func isValidHostAndOptionalPort(_ text: Substring) -> Bool {
    var host = text
    var port: Substring?
    if text.hasPrefix("[") {
        guard let close = text.firstIndex(of: "]") else { return false }
        host = text[text.index(after: text.startIndex)..<close]
        let after = text[text.index(after: close)...]
        if !after.isEmpty {
            guard after.hasPrefix(":") else { return false }
            port = after.dropFirst()
        }
        guard BridgeAddress.canonicalIPv6(String(host)) != nil else { return false }
    } else {
        if let colon = text.firstIndex(of: ":") {
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        guard BridgeAddress.canonicalIPv4(host) != nil || isValidHostName(host) else { return false }
    }
    if let port {
        guard !port.isEmpty, port.utf8.count <= 5, port.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
              let value = Int(port), value >= 1, value <= 65535 else { return false }
    }
    return true
}

/// Standard base64 (A–Z a–z 0–9 + /) without padding; nil on any other character or an
/// impossible length. Written out because the cert check must not depend on Foundation's
/// tolerance for whitespace and padding.
func decodeBase64(_ text: Substring) -> [UInt8]? {
    var bits: UInt32 = 0
    var bitCount = 0
    var output: [UInt8] = []
    output.reserveCapacity(text.utf8.count * 3 / 4)
    for byte in text.utf8 {
        let value: UInt8
        switch byte {
        case 65...90: value = byte - 65
        case 97...122: value = byte - 97 + 26
        case 48...57: value = byte - 48 + 52
        case UInt8(ascii: "+"): value = 62
        case UInt8(ascii: "/"): value = 63
        default: return nil
        }
        bits = (bits << 6) | UInt32(value)
        bitCount += 6
        if bitCount >= 8 {
            bitCount -= 8
            output.append(UInt8(truncatingIfNeeded: bits >> UInt32(bitCount)))
            bits &= (1 << UInt32(bitCount)) - 1
        }
    }
    // A single leftover character (6 bits) cannot encode a byte.
    if text.utf8.count % 4 == 1 { return nil }
    return output
}
