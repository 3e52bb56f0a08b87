import PosternTor

/// What the selector decided; the driver applies `trying` routes to tor and reports the rest.
public enum AssistEvent: Sendable, Hashable {
    /// Apply this route now. `position` is 1-based within `count` routes; `cycle` counts passes.
    case trying(AssistRoute, position: Int, count: Int, cycle: Int)
    /// Why the route of the `trying` that follows was chosen.
    case chose(RouteChoice)
    /// The previous route was given up, and why.
    case movedOn(RouteFailure)
    /// Every route of this pass failed; the next pass starts after `retryIn`. Tor keeps the last
    /// route meanwhile, so it may still connect.
    case allFailed([RouteFailure], retryIn: Duration)
    /// Bootstrap reached 100% on this route.
    case connected(AssistRoute, after: Duration)
    /// A probe of this route finished (race strategy).
    case probed(AssistRoute, ProbeResult)
    /// What the route's connections showed, read as a censor's technique (``CensorReader``); new
    /// or changed. A diagnosis that rules the route out is followed by its `movedOn` when the
    /// route was being tried.
    case diagnosed(AssistRoute, RouteDiagnosis)
}
