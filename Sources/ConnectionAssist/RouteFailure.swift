import PosternTor

/// Why connection assist left a route.
public struct RouteFailure: Sendable, Hashable, CustomStringConvertible {
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        /// Bootstrap stayed at one percentage for the route's whole no-progress window.
        public static let noProgress = Reason(rawValue: "no-progress")
        /// The route's ceiling passed before 100%.
        public static let ceilingReached = Reason(rawValue: "ceiling-reached")
        /// The route could not even be applied (e.g. its transport's listener did not start).
        public static let unavailable = Reason(rawValue: "unavailable")
        /// The settings changed and the route is gone or changed.
        public static let settingsChanged = Reason(rawValue: "settings-changed")
        /// tor's connections on the route were refused, reset or timed out repeatedly, towards
        /// several distinct peers (ORCONN failures, bootstrap warnings, transport dial errors).
        public static let connectionsFailing = Reason(rawValue: "connections-failing")
        /// The route's probe failed while another route's probe passed.
        public static let probeFailed = Reason(rawValue: "probe-failed")
        /// What the network did to the route's connections says it cannot work here
        /// (``CensorReader``: a protocol block, a freeze, an untrusted certificate, ...).
        public static let diagnosed = Reason(rawValue: "diagnosed")
        public var description: String { rawValue }
    }

    public let route: AssistRoute
    public let reason: Reason
    /// Bootstrap percentage and tag when assist moved on.
    public let progress: Int
    public let tag: String
    /// For noProgress, how long it stood still; otherwise how long the attempt lasted.
    public let duration: Duration
    public let detail: String?
    /// For connectionsFailing: what failed most, how often, towards how many distinct peers.
    public var problem: ConnectionProblem?
    public var failures: Int = 0
    public var distinctPeers: Int = 0
    /// For probeFailed: the probe that failed. Also true when the route was passed over without
    /// being applied to tor at all (its probe failed before its turn).
    public var probe: ProbeResult?
    public var skipped = false
    /// For diagnosed: what the route's connections showed.
    public var diagnosis: RouteDiagnosis?

    public init(route: AssistRoute, reason: Reason, progress: Int, tag: String, duration: Duration, detail: String?,
                problem: ConnectionProblem? = nil, failures: Int = 0, distinctPeers: Int = 0, probe: ProbeResult? = nil,
                skipped: Bool = false, diagnosis: RouteDiagnosis? = nil) {
        self.route = route
        self.reason = reason
        self.progress = progress
        self.tag = tag
        self.duration = duration
        self.detail = detail
        self.problem = problem
        self.failures = failures
        self.distinctPeers = distinctPeers
        self.probe = probe
        self.skipped = skipped
        self.diagnosis = diagnosis
    }

    /// "stalled at 10% "conn_done" for 30 s", "ceiling of 45 s reached at 50% "requesting_descriptors"".
    public var description: String {
        let at = "\(progress)% \"\(tag.isEmpty ? "starting" : tag)\""
        switch reason {
        case .noProgress: return "stalled at \(at) for \(duration.wholeOrFractionalSeconds) s"
        case .ceilingReached: return "ceiling of \(route.limits.ceiling.wholeOrFractionalSeconds) s reached at \(at)"
        case .unavailable: return "could not be used: \(detail ?? "unknown problem")"
        case .connectionsFailing:
            return "\(failures) connections failed (mostly \(problem?.rawValue ?? "other")) towards \(distinctPeers) distinct "
                + "\(distinctPeers == 1 ? "peer" : "peers") at \(at) after \(duration.wholeOrFractionalSeconds) s"
        case .probeFailed:
            let what = "probe \(probe?.summary ?? "failed") while another route's probe passed"
            return skipped ? "not tried: \(what)" : "\(what), after \(duration.wholeOrFractionalSeconds) s at \(at)"
        case .diagnosed:
            let what = "diagnosed: \(diagnosis?.technique.words ?? "cannot work here")"
            return skipped ? "not tried: \(what)" : "\(what), after \(duration.wholeOrFractionalSeconds) s"
        default: return "left after \(duration.wholeOrFractionalSeconds) s: \(detail ?? reason.rawValue)"
        }
    }
}
