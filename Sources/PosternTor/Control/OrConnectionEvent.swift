/// An OR connection status event: `650 ORCONN TARGET STATUS [REASON=...] [NCIRCS=...] [ID=...]`
/// (control-spec section "OR Connection status changed"). TARGET is `$FINGERPRINT~nickname`,
/// `$FINGERPRINT` or `ADDRESS:PORT`. Connection assist counts the failures among them.
public struct OrConnectionEvent: Sendable, Hashable {
    public struct Status: RawRepresentable, Sendable, Hashable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let new = Status(rawValue: "NEW")
        public static let launched = Status(rawValue: "LAUNCHED")
        public static let connected = Status(rawValue: "CONNECTED")
        public static let failed = Status(rawValue: "FAILED")
        public static let closed = Status(rawValue: "CLOSED")
    }

    /// The peer as tor names it. Identifies a relay or bridge: never shown, only compared.
    public let target: String
    public let status: Status
    /// tor's REASON keyword (MISC, DONE, CONNECTREFUSED, IDENTITY, CONNECTRESET, TIMEOUT, NOROUTE,
    /// IOERROR, RESOURCELIMIT, PT_MISSING, ...), nil when absent.
    public let reason: String?

    public init(target: String, status: Status, reason: String?) {
        self.target = target
        self.status = status
        self.reason = reason
    }

    /// Parses the text after "ORCONN "; nil when it is not an ORCONN event at all, throws when
    /// it is one but malformed.
    public static func parse(eventText text: String) throws(TorCoreError) -> OrConnectionEvent? {
        guard text.hasPrefix("ORCONN ") else { return nil }
        let (positional, keywords) = try ControlSyntax.keywordArguments(String(text.dropFirst("ORCONN ".count)))
        guard positional.count >= 2, !positional[0].isEmpty, positional[0].utf8.count <= 256,
              positional[1].utf8.count <= 32 else {
            throw TorCoreError(.controlProtocol, "ORCONN event without a target and a status")
        }
        return OrConnectionEvent(target: positional[0], status: Status(rawValue: positional[1]), reason: keywords["REASON"])
    }
}

/// What tor adds to a `STATUS_CLIENT WARN BOOTSTRAP` report: why it has trouble, how often, and
/// towards which peer (control-spec "Status events", BOOTSTRAP).
public struct BootstrapProblem: Sendable, Hashable {
    /// REASON: e.g. DONE, CONNECTREFUSED, IDENTITY, CONNECTRESET, TIMEOUT, NOROUTE, IOERROR, MISC.
    public var reason: String
    /// COUNT: how many problems tor has seen in this bootstrap phase.
    public var count: Int?
    /// RECOMMENDATION: "ignore" or "warn".
    public var recommendation: String?
    /// HOST (a fingerprint) or HOSTADDR (address:port): only compared, never shown.
    public var host: String?

    public init(reason: String, count: Int?, recommendation: String?, host: String?) {
        self.reason = reason
        self.count = count
        self.recommendation = recommendation
        self.host = host
    }
}
