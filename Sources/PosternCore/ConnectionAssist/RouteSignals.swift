import Foundation

/// Why one connection towards a route's peer failed, as a typed value (never matched by text).
public struct ConnectionProblem: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let refused = ConnectionProblem(rawValue: "refused")
    public static let reset = ConnectionProblem(rawValue: "reset")
    public static let timeout = ConnectionProblem(rawValue: "timeout")
    public static let noRoute = ConnectionProblem(rawValue: "no-route")
    /// The peer answered with the wrong identity (a man in the middle, or a wrong fingerprint).
    public static let identity = ConnectionProblem(rawValue: "identity")
    /// A read or write failed mid-handshake (a DPI box tearing down TLS looks like this).
    public static let ioError = ConnectionProblem(rawValue: "io-error")
    /// A transport's own handshake failed (obfs4 reply wrong, snowflake broker or proxy failed).
    public static let handshake = ConnectionProblem(rawValue: "handshake")
    public static let other = ConnectionProblem(rawValue: "other")

    /// A tor REASON keyword (ORCONN or BOOTSTRAP) as a problem; nil for reasons that say nothing
    /// about the route (DONE: closed on purpose; RESOURCELIMIT, PT_MISSING: local; MISC).
    public init?(torReason: String) {
        switch torReason.uppercased() {
        case "CONNECTREFUSED": self = .refused
        case "CONNECTRESET": self = .reset
        case "TIMEOUT": self = .timeout
        case "NOROUTE": self = .noRoute
        case "IDENTITY": self = .identity
        case "IOERROR": self = .ioError
        default: return nil
        }
    }

    /// A transport's typed dial error (TransportError's code and kind) as a problem.
    public init(transportCode code: String, kind: String) {
        switch code {
        case "connection-refused": self = .refused
        case "connection-reset": self = .reset
        case "network-unreachable", "host-unreachable": self = .noRoute
        case "timed-out": self = .timeout
        default:
            if kind == "timeout" { self = .timeout } else if code.hasPrefix("obfs4-") || code.hasPrefix("snowflake-") {
                self = .handshake
            } else { self = .other }
        }
    }
}

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

/// Decides from failure signals whether a route has failed: its connections are refused, reset
/// or time out repeatedly, towards several distinct peers (or towards every peer the route has).
/// Progress forgets the failures seen before it: a working network has the odd dead relay.
public struct FailureJudge: Sendable, Hashable {
    /// Failures needed in all.
    public var minimumFailures: Int
    /// Distinct peers needed (capped at the number of peers the route has).
    public var minimumDistinctPeers: Int

    public init(minimumFailures: Int = 3, minimumDistinctPeers: Int = 2) {
        self.minimumFailures = minimumFailures
        self.minimumDistinctPeers = minimumDistinctPeers
    }

    /// What the judge has seen since the route's last progress.
    public struct Tally: Sendable, Hashable {
        public private(set) var failures = 0
        public private(set) var peers: Set<String> = []
        public private(set) var problems: [ConnectionProblem: Int] = [:]
        /// The highest COUNT tor reported in a RECOMMENDATION=warn bootstrap warning.
        public private(set) var torWarnCount = 0
        public init() {}

        mutating func add(_ signal: ConnectionSignal) {
            // tor reports each failed OR connection twice (ORCONN and a bootstrap warning): the
            // warning adds its peer and COUNT, not another failure.
            if signal.source != .bootstrapWarning { failures += 1 }
            if let peer = signal.peer, peers.count < 64 { peers.insert(peer) }
            problems[signal.problem, default: 0] += 1
            if signal.torRecommendsWarning, let count = signal.count { torWarnCount = max(torWarnCount, count) }
        }

        /// The most frequent problem (ties broken by name, so the result is stable).
        public var mainProblem: ConnectionProblem? {
            problems.max { $0.value < $1.value || ($0.value == $1.value && $0.key.rawValue > $1.key.rawValue) }?.key
        }
    }

    /// True when `tally` is enough to give up on a route with `peerCount` peers (nil: unknown,
    /// e.g. direct, where tor picks among many authorities and relays).
    public func hasFailed(_ tally: Tally, peerCount: Int?) -> Bool {
        let needed = min(minimumDistinctPeers, max(peerCount ?? minimumDistinctPeers, 1))
        if tally.failures >= minimumFailures && tally.peers.count >= needed { return true }
        // tor counted the problems itself and recommends warning about them.
        return tally.torWarnCount >= minimumFailures && tally.peers.count >= needed
    }
}

/// What probing one route found. Holds no bridge data: steps name what was done, not where.
public struct ProbeResult: Sendable, Hashable, Codable {
    public struct Outcome: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
        public static let passed = Outcome(rawValue: "passed")
        public static let failed = Outcome(rawValue: "failed")
        /// Nothing could be probed (e.g. no address known): says nothing either way.
        public static let skipped = Outcome(rawValue: "skipped")
    }

    public struct Step: Sendable, Hashable, Codable {
        /// "tcp", "obfs4-handshake", "snowflake-rendezvous+data-channel", ...
        public var name: String
        public var outcome: Outcome
        public var milliseconds: Double?
        public var problem: ConnectionProblem?
        public init(name: String, outcome: Outcome, milliseconds: Double?, problem: ConnectionProblem? = nil) {
            self.name = name
            self.outcome = outcome
            self.milliseconds = milliseconds
            self.problem = problem
        }
    }

    public var outcome: Outcome
    /// How long the probe took to pass (or to fail).
    public var milliseconds: Double
    public var steps: [Step]
    /// Peers tried and peers that answered (direct tries a few authorities).
    public var peersTried: Int
    public var peersAnswered: Int
    public var problem: ConnectionProblem?

    public init(outcome: Outcome, milliseconds: Double, steps: [Step], peersTried: Int, peersAnswered: Int,
                problem: ConnectionProblem? = nil) {
        self.outcome = outcome
        self.milliseconds = milliseconds
        self.steps = steps
        self.peersTried = peersTried
        self.peersAnswered = peersAnswered
        self.problem = problem
    }

    /// "passed in 12 ms (tcp, obfs4-handshake)", "failed after 3000 ms: timeout (0 of 2 answered)".
    public var summary: String {
        let names = steps.map(\.name).joined(separator: ", ")
        switch outcome {
        case .passed: return "passed in \(Int(milliseconds.rounded())) ms (\(names))"
        case .skipped: return "not probed"
        default:
            return "failed after \(Int(milliseconds.rounded())) ms: \(problem?.rawValue ?? "other") (\(peersAnswered) of \(peersTried) answered)"
        }
    }
}
