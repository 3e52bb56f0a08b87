import Foundation

/// One sign that a route is failing: a failed OR connection, a bootstrap warning, a transport's
/// failed dial, all at one level so the judge can count them alike.
public struct ConnectionSignal: Sendable, Hashable {
    public struct Source: RawRepresentable, Sendable, Hashable, Codable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// `650 ORCONN ... FAILED|CLOSED REASON=...`.
        public static let orConnection = Source(rawValue: "orconn")
        /// `650 STATUS_CLIENT WARN BOOTSTRAP ... REASON=... COUNT=...`.
        public static let bootstrapWarning = Source(rawValue: "bootstrap-warning")
        /// One of our transports' dials failed (TransportEvent dial-failed).
        public static let transportDial = Source(rawValue: "transport-dial")
    }

    public let source: Source
    public let problem: ConnectionProblem
    /// The peer (fingerprint, address, or a transport name for a dial): compared, never shown.
    public let peer: String?
    /// tor's COUNT for bootstrap warnings.
    public let count: Int?
    /// tor's RECOMMENDATION=warn: tor itself thinks this is a real problem.
    public let torRecommendsWarning: Bool

    public init(source: Source, problem: ConnectionProblem, peer: String?, count: Int? = nil, torRecommendsWarning: Bool = false) {
        self.source = source
        self.problem = problem
        self.peer = peer
        self.count = count
        self.torRecommendsWarning = torRecommendsWarning
    }

    /// An ORCONN event that says the connection failed for a reason about the route.
    public init?(_ event: OrConnectionEvent) {
        guard event.status == .failed || event.status == .closed, let reason = event.reason,
              let problem = ConnectionProblem(torReason: reason) else { return nil }
        // A connection that was open and then closed with IOERROR/RESET is also a route problem
        // (DPI cutting an established link); DONE/MISC closes are tor's own housekeeping.
        self.init(source: .orConnection, problem: problem, peer: event.target)
    }

    /// A bootstrap warning with a REASON about the route.
    public init?(_ problem: BootstrapProblem) {
        guard let kind = ConnectionProblem(torReason: problem.reason) else { return nil }
        self.init(source: .bootstrapWarning, problem: kind, peer: problem.host, count: problem.count,
                  torRecommendsWarning: problem.recommendation == "warn")
    }
}
