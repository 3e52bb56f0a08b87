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

    /// "stalled at 10% "conn_done" for 30 s", "ceiling of 45 s reached at 50% "requesting_descriptors"".
    public var description: String {
        let at = "\(progress)% \"\(tag.isEmpty ? "starting" : tag)\""
        switch reason {
        case .noProgress: return "stalled at \(at) for \(duration.wholeOrFractionalSeconds) s"
        case .ceilingReached: return "ceiling of \(route.limits.ceiling.wholeOrFractionalSeconds) s reached at \(at)"
        case .unavailable: return "could not be used: \(detail ?? "unknown problem")"
        default: return "left after \(duration.wholeOrFractionalSeconds) s: \(detail ?? reason.rawValue)"
        }
    }
}

/// What the selector decided; the driver applies `trying` routes to tor and reports the rest.
public enum AssistEvent: Sendable, Hashable {
    /// Apply this route now. `position` is 1-based within `count` routes; `cycle` counts passes.
    case trying(AssistRoute, position: Int, count: Int, cycle: Int)
    /// The previous route was given up, and why.
    case movedOn(RouteFailure)
    /// Every route of this pass failed; the next pass starts after `retryIn`. Tor keeps the last
    /// route meanwhile, so it may still connect.
    case allFailed([RouteFailure], retryIn: Duration)
    /// Bootstrap reached 100% on this route.
    case connected(AssistRoute, after: Duration)
}

/// The connection assist state machine: which route to try, when to give up on it, and the
/// backoff between passes. It has no clock and no tor: every input carries the current time (a
/// monotonic `Duration` since any fixed origin), so tests drive it with made-up times.
public struct RouteSelector: Sendable {
    public enum Phase: Sendable, Hashable {
        case idle
        case trying
        /// Every route failed; a new pass starts at `until`.
        case waiting(until: Duration)
        case connected
    }

    /// Delays between failed passes: `initial`, doubling, at most `maximum`.
    public struct Backoff: Sendable, Hashable {
        public var initial: Duration
        public var maximum: Duration
        public init(initial: Duration = .seconds(5), maximum: Duration = .seconds(120)) {
            self.initial = initial
            self.maximum = maximum
        }
        public static let standard = Backoff()

        /// The delay after the `failedPasses`-th failed pass in a row (1-based).
        public func delay(afterFailedPasses failedPasses: Int) -> Duration {
            var delay = initial
            for _ in 1..<max(failedPasses, 1) {
                delay *= 2
                if delay >= maximum { return maximum }
            }
            return min(delay, maximum)
        }
    }

    public private(set) var routes: [AssistRoute]
    public private(set) var phase: Phase = .idle
    public let backoff: Backoff
    /// Index of the route tor is configured with (kept while waiting).
    public private(set) var currentIndex: Int?
    /// 1-based pass number.
    public private(set) var cycle = 0
    /// Passes in a row in which every route failed.
    public private(set) var failedPasses = 0
    /// This pass's failures, in order.
    public private(set) var failuresThisPass: [RouteFailure] = []
    /// Every route tried since start, in order (keys may repeat across passes).
    public private(set) var triedKeys: [String] = []
    /// The most recent failure, kept across passes for status.
    public private(set) var lastFailure: RouteFailure?

    private var started: Duration = .zero
    private var attemptStart: Duration = .zero
    private var lastProgressAt: Duration = .zero
    private var bestProgress = 0
    private var progress = 0
    private var tag = ""

    public init(routes: [AssistRoute], backoff: Backoff = .standard) {
        self.routes = routes
        self.backoff = backoff
    }

    public var currentRoute: AssistRoute? { currentIndex.map { routes[$0] } }
    public var allFailed: Bool { if case .waiting = phase { true } else { false } }

    /// When the selector next needs a `tick` even if nothing else happens.
    public var nextDeadline: Duration? {
        switch phase {
        case .trying:
            guard let route = currentRoute else { return nil }
            return min(attemptStart + route.limits.ceiling, lastProgressAt + route.limits.noProgressWindow)
        case .waiting(let until): return until
        case .idle, .connected: return nil
        }
    }

    /// Starts the first pass with the first route.
    public mutating func start(at now: Duration, progress: Int = 0, tag: String = "") -> [AssistEvent] {
        started = now
        self.progress = progress
        self.tag = tag
        return beginPass(at: now)
    }

    /// A bootstrap report from tor. `ready` is 100% with the SOCKS listener bound.
    public mutating func observe(progress newProgress: Int, tag newTag: String, ready: Bool, at now: Duration) -> [AssistEvent] {
        progress = newProgress
        tag = newTag
        switch phase {
        case .trying, .waiting:
            guard let route = currentRoute else { return [] }
            if ready {
                phase = .connected
                failedPasses = 0
                return [.connected(route, after: now - started)]
            }
            if case .trying = phase, newProgress > bestProgress {
                bestProgress = newProgress
                lastProgressAt = now
            }
            return []
        case .idle, .connected:
            return []
        }
    }

    /// Checks the current route's ceiling and no-progress window, and the end of a backoff.
    public mutating func tick(at now: Duration) -> [AssistEvent] {
        switch phase {
        case .trying:
            guard let route = currentRoute else { return [] }
            if now - attemptStart >= route.limits.ceiling {
                return moveOn(RouteFailure(route: route, reason: .ceilingReached, progress: progress, tag: tag,
                                           duration: now - attemptStart, detail: nil), at: now)
            }
            if now - lastProgressAt >= route.limits.noProgressWindow {
                return moveOn(RouteFailure(route: route, reason: .noProgress, progress: progress, tag: tag,
                                           duration: now - lastProgressAt, detail: nil), at: now)
            }
            return []
        case .waiting(let until):
            return now >= until ? beginPass(at: now) : []
        case .idle, .connected:
            return []
        }
    }

    /// The driver could not apply the current route (`message` says why): move on at once.
    public mutating func routeUnavailable(_ message: String, at now: Duration) -> [AssistEvent] {
        guard case .trying = phase, let route = currentRoute else { return [] }
        return moveOn(RouteFailure(route: route, reason: .unavailable, progress: progress, tag: tag,
                                   duration: now - attemptStart, detail: message), at: now)
    }

    /// The settings changed. A route that is new (or whose bridges changed) is tried at once; a
    /// connected route that is still there is kept; otherwise the search starts over.
    public mutating func replaceRoutes(_ newRoutes: [AssistRoute], at now: Duration) -> [AssistEvent] {
        let old = routes
        let current = currentRoute
        routes = newRoutes
        let keptIndex = current.flatMap { route in newRoutes.firstIndex(of: route) }
        if case .connected = phase {
            if let keptIndex {
                currentIndex = keptIndex
                return []
            }
        } else if case .idle = phase {
            return []
        }
        let fresh = newRoutes.firstIndex { !old.contains($0) }
        var events: [AssistEvent] = []
        if let fresh {
            if let current, case .trying = phase {
                events.append(.movedOn(RouteFailure(route: current, reason: .settingsChanged, progress: progress, tag: tag,
                                                    duration: now - attemptStart, detail: "the settings changed")))
            }
            failedPasses = 0
            failuresThisPass = []
            return events + tryRoute(at: fresh, now: now)
        }
        if let keptIndex, case .trying = phase {
            currentIndex = keptIndex
            return []
        }
        if newRoutes.isEmpty {
            phase = .idle
            currentIndex = nil
            return []
        }
        failedPasses = 0
        return beginPass(at: now)
    }

    // MARK: Internals

    private mutating func beginPass(at now: Duration) -> [AssistEvent] {
        cycle += 1
        failuresThisPass = []
        guard !routes.isEmpty else {
            phase = .idle
            return []
        }
        return tryRoute(at: 0, now: now)
    }

    private mutating func tryRoute(at index: Int, now: Duration) -> [AssistEvent] {
        currentIndex = index
        phase = .trying
        attemptStart = now
        lastProgressAt = now
        bestProgress = progress
        triedKeys.append(routes[index].key)
        return [.trying(routes[index], position: index + 1, count: routes.count, cycle: cycle)]
    }

    private mutating func moveOn(_ failure: RouteFailure, at now: Duration) -> [AssistEvent] {
        failuresThisPass.append(failure)
        lastFailure = failure
        var events: [AssistEvent] = [.movedOn(failure)]
        let next = (currentIndex ?? -1) + 1
        if next < routes.count {
            return events + tryRoute(at: next, now: now)
        }
        failedPasses += 1
        let delay = backoff.delay(afterFailedPasses: failedPasses)
        phase = .waiting(until: now + delay)
        events.append(.allFailed(failuresThisPass, retryIn: delay))
        return events
    }
}
