import PosternSystem
import TransportBase

/// Bridge-line ClientHello names (snowflake's `utls-imitate=`, lyrebird's webtunnel `utls=`: the uTLS
/// ClientHelloID names lyrebird and snowflake accept) mapped to the profiles NSS 3.87 can send,
/// and each transport's default. Why each family maps where it does: docs/FINGERPRINTS.md,
/// "Profiles".
extension BrowserTLSProfile {
    /// A bridge-line name, the profile it gets and, when the profile is not what the name asks
    /// for, why.
    public struct Choice: Sendable, Hashable {
        /// The name as asked for, lower-cased; nil when the bridge line names none (the
        /// transport's default).
        public let requestedName: String?
        public let profile: BrowserTLSProfile
        /// Nil when the profile is what the name asks for; else the reason it is the nearest.
        public let substitution: String?
    }

    /// Browser families whose hello NSS cannot send (GREASE, extension permutation, ALPS,
    /// certificate compression, post-quantum shares: Chrome and its relatives, Apple's stack).
    /// A Chrome-shaped NSS hello without GREASE or permutation would be a hello nobody else sends,
    /// so these names get Firefox ESR's, the nearest real browser NSS can send.
    private static let unreachableFamilies: [(prefix: String, browser: String)] = [
        ("hellochrome_", "Chrome"), ("helloedge_", "Edge"), ("hellosafari_", "Safari"), ("helloios_", "iOS"),
        ("helloandroid_", "Android's OkHttp"), ("hello360_", "360 Browser"), ("helloqq_", "QQ Browser"),
    ]

    /// The profile for a name a bridge line carries (`hellorandomizedalpn`, `HelloChrome_Auto`,
    /// `helloios_14`, `none`, …) or one of Postern's own profile names (`firefox-esr`,
    /// `randomized-alpn`, …), in any case. Versioned names take the family's profile: NSS sends one
    /// Firefox, and the version a uTLS name pins is years old.
    public static func named(_ name: String) throws(TransportError) -> BrowserTLSProfile {
        try choice(forName: name).profile
    }

    /// ``named(_:)`` with the reason when the profile is a substitute.
    public static func choice(forName name: String) throws(TransportError) -> Choice {
        let lower = name.lowercased()
        if let own = all.first(where: { $0.name == lower }) {
            return Choice(requestedName: lower, profile: own, substitution: nil)
        }
        switch lower {
        case "hellorandomized": return Choice(requestedName: lower, profile: .randomized, substitution: nil)
        case "hellorandomizedalpn": return Choice(requestedName: lower, profile: .randomizedALPN, substitution: nil)
        case "hellorandomizednoalpn": return Choice(requestedName: lower, profile: .randomizedNoALPN, substitution: nil)
        case "hellogolang", "none":
            // The reference clients send Go's crypto/tls hello here; Postern never sends its TLS
            // library's default hello, so it sends the nearest browser's instead.
            return Choice(requestedName: lower, profile: .firefoxESR,
                          substitution: "Go's own TLS hello is not sent; Firefox ESR's is the nearest browser hello NSS 3.87 sends")
        default:
            break
        }
        if hasVersion(lower, family: "hellofirefox_") {
            // A pinned version is years old: its hello is one nobody sends today.
            return Choice(requestedName: lower, profile: .firefoxESR,
                          substitution: lower == "hellofirefox_auto" ? nil
                              : "Firefox ESR 153's hello is sent, not that of the Firefox version the name pins")
        }
        for family in unreachableFamilies where hasVersion(lower, family: family.prefix) {
            return Choice(requestedName: lower, profile: .firefoxESR,
                          substitution: "NSS 3.87 cannot send \(family.browser)'s hello (GREASE, extension permutation); Firefox ESR's is the nearest browser hello it sends")
        }
        throw TransportError(code: .unknownTLSProfile, kind: .invalidInput,
                             message: "'\(PlainText.visible(name.count <= 64 ? name : String(name.prefix(64)) + "…"))' is not a TLS ClientHello name Postern knows "
                                + "(uTLS names such as hellorandomizedalpn, hellorandomizednoalpn, hellofirefox_auto, hellochrome_auto, or none; "
                                + "Postern's own: \(all.map(\.name).joined(separator: ", ")))")
    }

    /// `family` followed by a version ("auto", "120", "11_1"): lower-case letters, digits and `_`, as
    /// the bridge-line check (PosternLinkSpec's BridgeArgumentSyntax) accepts them.
    private static func hasVersion(_ name: String, family: String) -> Bool {
        guard name.hasPrefix(family) else { return false }
        let version = name.utf8.dropFirst(family.utf8.count)
        return !version.isEmpty && version.allSatisfy { ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: "_") }
    }

    /// snowflake's broker, front and AMP cache connections without `utls-imitate=`: Tor Browser's
    /// built-in snowflake lines all ask for `hellorandomizedalpn`, so Postern's snowflake users look
    /// like Tor Browser's (the reference client alone would send Go's own hello).
    public static let defaultForSnowflake = BrowserTLSProfile.randomizedALPN
    /// webtunnel without `utls=` or with an empty one: lyrebird 0.7's default, `hellorandomizednoalpn`.
    public static let defaultForWebtunnel = BrowserTLSProfile.randomizedNoALPN

    /// The profile for snowflake's `utls-imitate=` value (nil: absent).
    public static func forSnowflake(utlsImitate: String?) throws(TransportError) -> Choice {
        guard let name = utlsImitate else { return Choice(requestedName: nil, profile: defaultForSnowflake, substitution: nil) }
        return try choice(forName: name)
    }

    /// The profile for webtunnel's `utls=` value as written on the bridge line (nil: absent; empty
    /// means lyrebird's default too).
    public static func forWebtunnel(utls: String?) throws(TransportError) -> Choice {
        guard let name = utls, !name.isEmpty else { return Choice(requestedName: nil, profile: defaultForWebtunnel, substitution: nil) }
        return try choice(forName: name)
    }
}
