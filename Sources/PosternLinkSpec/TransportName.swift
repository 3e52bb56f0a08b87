/// The name of a pluggable transport as it appears at the start of a bridge line and in
/// `ClientTransportPlugin`: a C identifier (`[A-Za-z_][A-Za-z0-9_]*`), as tor requires.
/// A line without a transport has the name `vanilla`, which is never printed in the line itself.
public struct TransportName: Hashable, Sendable, Comparable, CustomStringConvertible, LosslessStringConvertible {
    public let rawValue: String

    /// Validates `text` as a transport name. Names are case-sensitive in tor; use
    /// `TransportName.known(matching:)` to map a differently-cased well-known name.
    public init(validating text: String) throws(BridgeLineError) {
        guard Self.isCIdentifier(text) else {
            throw BridgeLineError(code: .badTransportName, kind: .invalidInput,
                                    message: "not a valid transport name (letters, digits and _, not starting with a digit)")
        }
        self.rawValue = text
    }

    public init?(_ description: String) {
        guard let name = try? TransportName(validating: description) else { return nil }
        self = name
    }

    private init(trusted: String) { rawValue = trusted }

    public var description: String { rawValue }

    public static func < (lhs: TransportName, rhs: TransportName) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Plain Tor bridges without a pluggable transport.
    public static let vanilla = TransportName(trusted: "vanilla")
    public static let obfs4 = TransportName(trusted: "obfs4")
    public static let snowflake = TransportName(trusted: "snowflake")
    public static let meekLite = TransportName(trusted: "meek_lite")
    public static let webtunnel = TransportName(trusted: "webtunnel")
    public static let dnstt = TransportName(trusted: "dnstt")

    /// The well-known names: a bridge line's transport written in another case is normalised to
    /// one of these. Which transports' arguments are checked is up to the `BridgeArgumentRulebook`
    /// the line is parsed with.
    public static let known: [TransportName] = [.vanilla, .obfs4, .snowflake, .meekLite, .webtunnel, .dnstt]

    /// The name for messages and logs. Well-known and short names are harmless; a long unknown
    /// "transport" is usually something else pasted in first position (a 40-hex fingerprint is a
    /// valid C identifier), so under safe logging it is scrubbed.
    public func description(policy: LoggingPolicy) -> String {
        policy.unsafeLogging || isKnown || rawValue.utf8.count <= 24 ? rawValue : LoggingPolicy.scrubbed
    }

    public var isVanilla: Bool { self == .vanilla }
    public var isKnown: Bool { Self.known.contains(self) }

    /// The well-known transport whose name equals `text` ignoring case, if any.
    public static func known(matching text: String) -> TransportName? {
        known.first { $0.rawValue.lowercased() == text.lowercased() }
    }

    static func isCIdentifier(_ text: String) -> Bool {
        guard let first = text.utf8.first, text.utf8.count <= 64 else { return false }
        func isLetter(_ byte: UInt8) -> Bool { (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || byte == 95 }
        guard isLetter(first) else { return false }
        return text.utf8.allSatisfy { isLetter($0) || ($0 >= 48 && $0 <= 57) }
    }
}
