import PosternTor

/// The connection assist state machine: which route to try, when to give up on it, and the
/// backoff between passes. It has no clock and no tor: every input carries the current time (a
/// monotonic `Duration` since any fixed origin), so tests drive it with made-up times.
///
/// With the race strategy it also takes probe results (`probeFinished`) and failure signals
/// (`observe(signal:)`): a route is left as soon as its connections fail towards several peers,
/// or its probe fails while another route's passed; the next route is the best one whose probe
/// passed. The ceiling and no-progress window stay, as the last resort for silent drops.
public struct RouteSelector: Sendable {
    public enum Phase: Sendable, Hashable {
        case idle
        case trying
        /// Every route failed; a new pass starts at `until`.
        case waiting(until: Duration)
        case connected
    }

    public private(set) var routes: [AssistRoute]
    public private(set) var phase: Phase = .idle
    public let backoff: Backoff
    public let strategy: AssistStrategy
    public let judge: FailureJudge
    /// Signals within this time of applying a route are ignored: they may come from tearing down
    /// the previous route's connections.
    public var signalGrace: Duration = .seconds(1)
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
    /// This pass's probe results by route key (race strategy).
    public private(set) var probes: [String: ProbeResult] = [:]
    /// Failure signals on the current route since its last progress.
    public private(set) var tally = FailureJudge.Tally()
    /// Route keys whose probe is running now (the driver says so with `probeStarted`).
    public private(set) var probesRunning: Set<String> = []
    /// When each of this pass's probe results came in.
    private var probeTimes: [String: Duration] = [:]
    /// The latest diagnosis per route key and when it was made; kept across passes, since it
    /// describes this network (one that rules its route out holds for ``RouteDiagnosis/holds``).
    public private(set) var diagnoses: [String: (diagnosis: RouteDiagnosis, at: Duration)] = [:]

    private var started: Duration = .zero
    private var attemptStart: Duration = .zero
    private var lastProgressAt: Duration = .zero
    private var bestProgress = 0
    private var progress = 0
    private var tag = ""
    /// Keys left (tried or passed over) in this pass.
    private var doneThisPass: Set<String> = []

    public init(routes: [AssistRoute], backoff: Backoff = .standard, strategy: AssistStrategy = .sequential,
                judge: FailureJudge = FailureJudge()) {
        self.routes = routes
        self.backoff = backoff
        self.strategy = strategy
        self.judge = judge
    }

    public var currentRoute: AssistRoute? { currentIndex.map { routes[$0] } }
    public var allFailed: Bool { if case .waiting = phase { true } else { false } }

    /// How long the route being tried has gone without bootstrap progress (nil unless a route is
    /// being tried): while it grows, tor is waiting on that route's bridge for what comes next.
    public func withoutProgress(at now: Duration) -> Duration? {
        guard case .trying = phase, currentRoute != nil else { return nil }
        return now - lastProgressAt
    }

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
                tally = FailureJudge.Tally()
            }
            return []
        case .idle, .connected:
            return []
        }
    }

    /// A failure signal about the route tor is using (race strategy; ignored by sequential).
    public mutating func observe(signal: ConnectionSignal, at now: Duration) -> [AssistEvent] {
        guard strategy == .race, case .trying = phase, let route = currentRoute, now - attemptStart >= signalGrace,
              route.isPeer(signal.peer) else { return [] }
        tally.add(signal)
        guard judge.hasFailed(tally, peerCount: route.isDirect ? nil : route.bridges.count) else { return [] }
        return moveOn(RouteFailure(route: route, reason: .connectionsFailing, progress: progress, tag: tag,
                                   duration: now - attemptStart, detail: nil, problem: tally.mainProblem,
                                   failures: tally.failures, distinctPeers: tally.peers.count), at: now)
    }

    /// A probe of the route with `key` started (race strategy): while it runs, a route after it
    /// in the order is not chosen over it on a probe result alone.
    public mutating func probeStarted(forKey key: String, cycle probeCycle: Int) {
        guard strategy == .race, probeCycle == cycle else { return }
        probesRunning.insert(key)
    }

    /// A probe of the route with `key` finished (race strategy). When the current route's probe
    /// failed while another passed, or the current one failed before and now another passed,
    /// assist moves on to the best route that passed.
    public mutating func probeFinished(_ result: ProbeResult, forKey key: String, cycle probeCycle: Int, at now: Duration) -> [AssistEvent] {
        guard strategy == .race, probeCycle == cycle, let route = routes.first(where: { $0.key == key }) else { return [] }
        probes[key] = result
        probeTimes[key] = now
        probesRunning.remove(key)
        var events: [AssistEvent] = [.probed(route, result)]
        if case .trying = phase, let current = currentRoute, looksFailed(current.key), !anEarlierRouteIsStillBeingProbed() {
            events += moveOn(RouteFailure(route: current, reason: .probeFailed, progress: progress, tag: tag,
                                          duration: now - attemptStart, detail: nil, probe: probes[current.key]), at: now)
        }
        return events
    }

    /// What ``CensorReader`` read from `route`'s connections. A new or changed diagnosis is
    /// reported (`diagnosed`); one that rules the route out leaves it at once when it is being tried
    /// (race strategy; the sequential strategy only reports it), and passes it over later in the
    /// pass. The routes that should pass the technique go next.
    public mutating func observe(diagnosis: RouteDiagnosis, route: AssistRoute, at now: Duration) -> [AssistEvent] {
        guard routes.contains(where: { $0.key == route.key }) else { return [] }
        // The same conclusion with other numbers is not news.
        if let known = diagnoses[route.key]?.diagnosis, known.technique == diagnosis.technique, known.confidence == diagnosis.confidence,
           known.rulesOutRoute == diagnosis.rulesOutRoute, let at = diagnoses[route.key]?.at, now - at < RouteDiagnosis.holds { return [] }
        diagnoses[route.key] = (diagnosis, now)
        var events: [AssistEvent] = [.diagnosed(route, diagnosis)]
        guard strategy == .race, diagnosis.rulesOutRoute, case .trying = phase, let current = currentRoute, current.key == route.key else {
            return events
        }
        events += moveOn(RouteFailure(route: current, reason: .diagnosed, progress: progress, tag: tag, duration: now - attemptStart,
                                      detail: nil, diagnosis: diagnosis), at: now)
        return events
    }

    /// The diagnosis that rules `key`'s route out now, if any.
    private func rulingOut(_ key: String, at now: Duration) -> RouteDiagnosis? {
        guard strategy == .race, let known = diagnoses[key], known.diagnosis.rulesOutRoute, now - known.at < RouteDiagnosis.holds else { return nil }
        return known.diagnosis
    }

    /// The most recent diagnosis still holding that names transports which would pass, and its route.
    private func guidingDiagnosis(at now: Duration) -> (route: AssistRoute, diagnosis: RouteDiagnosis)? {
        let holding = diagnoses.filter { $0.value.diagnosis.rulesOutRoute && !$0.value.diagnosis.passes.isEmpty && now - $0.value.at < RouteDiagnosis.holds }
        guard let latest = holding.max(by: { $0.value.at < $1.value.at }), let route = routes.first(where: { $0.key == latest.key }) else { return nil }
        return (route, latest.value.diagnosis)
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
            doneThisPass = []
            return events + tryRoute(at: fresh, now: now, why: .newInSettings)
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

    /// The route keys that still need a probe in this pass (race strategy), in order.
    public var unprobedKeys: [String] {
        strategy == .race ? routes.map(\.key).filter { probes[$0] == nil } : []
    }

    /// ``unprobedKeys`` without the routes a diagnosis rules out at `now`: a probe of one would
    /// only add to the censor's evidence (issue #22, "no probe of a route the diagnosis has ruled out").
    public func unprobedKeys(at now: Duration) -> [String] {
        unprobedKeys.filter { !rulesOut($0, at: now) }
    }

    /// True while a diagnosis rules `key`'s route out (race strategy).
    public func rulesOut(_ key: String, at now: Duration) -> Bool { rulingOut(key, at: now) != nil }

    /// A diagnosis an earlier run made on this network (``AssistMemory``), `at` before this run's
    /// origin (a negative time): not reported again; it rules its route out while it holds
    /// (``RouteDiagnosis/holds`` from when it was made), and guides the choice like one of this run.
    public mutating func remember(_ diagnosis: RouteDiagnosis, forKey key: String, at: Duration) {
        guard routes.contains(where: { $0.key == key }), diagnoses[key] == nil else { return }
        diagnoses[key] = (diagnosis, at)
    }

    // MARK: Internals

    /// True when a route not yet left in this pass, ahead in the order of every route whose probe
    /// passed, is still being probed: its answer is worth the wait (at most its probe's limit),
    /// as the order puts the routes that bootstrap faster and cost less first.
    private func anEarlierRouteIsStillBeingProbed() -> Bool {
        guard let firstPassed = routes.firstIndex(where: { !doneThisPass.contains($0.key) && probes[$0.key]?.outcome == .passed }) else {
            return false
        }
        return routes[..<firstPassed].contains { !doneThisPass.contains($0.key) && probesRunning.contains($0.key) }
    }

    /// A route whose probe failed in this pass while another route's probe had passed already:
    /// the network worked when this route did not. A pass that came in only after the failure
    /// does not count (the network may just have come up); `needsRecheck` asks for a new probe.
    private func looksFailed(_ key: String) -> Bool {
        guard strategy == .race, let result = probes[key], result.outcome == .failed, let failedAt = probeTimes[key] else { return false }
        return probes.contains { other in
            other.key != key && other.value.outcome == .passed && (probeTimes[other.key] ?? .zero) <= failedAt
        }
    }

    /// True when the current route's probe failed, no pass came in before that failure, and one
    /// came in after it: the failure may be stale, so the driver probes the route again now.
    public var currentFailureNeedsRecheck: Bool {
        guard strategy == .race, case .trying = phase, let key = currentRoute?.key, let result = probes[key],
              result.outcome == .failed, !probesRunning.contains(key), !looksFailed(key), let failedAt = probeTimes[key] else { return false }
        return probes.contains { other in
            other.key != key && other.value.outcome == .passed && (probeTimes[other.key] ?? .zero) > failedAt
        }
    }

    private mutating func beginPass(at now: Duration) -> [AssistEvent] {
        cycle += 1
        failuresThisPass = []
        doneThisPass = []
        probes = [:]
        probeTimes = [:]
        probesRunning = []
        guard !routes.isEmpty else {
            phase = .idle
            return []
        }
        guard rulingOut(routes[0].key, at: now) != nil else { return tryRoute(at: 0, now: now, why: .firstInOrder) }
        // The first route is still ruled out on this network: go where the diagnosis points (race
        // only, so nextRoute looks at every route whatever the current one).
        let next = nextRoute(at: now)
        var events: [AssistEvent] = failuresThisPass.map { .movedOn($0) }
        if let next { return events + tryRoute(at: next.index, now: now, why: next.why, guide: next.guide) }
        failedPasses += 1
        let delay = backoff.delay(afterFailedPasses: failedPasses)
        phase = .waiting(until: now + delay)
        events.append(.allFailed(failuresThisPass, retryIn: delay))
        return events
    }

    private mutating func tryRoute(at index: Int, now: Duration, why: RouteChoice.Reason,
                                   guide: (route: AssistRoute, diagnosis: RouteDiagnosis)? = nil) -> [AssistEvent] {
        currentIndex = index
        phase = .trying
        attemptStart = now
        lastProgressAt = now
        bestProgress = progress
        tally = FailureJudge.Tally()
        let route = routes[index]
        doneThisPass.insert(route.key)
        triedKeys.append(route.key)
        return [.chose(RouteChoice(route: route, reason: why, probe: probes[route.key], diagnosis: guide?.diagnosis, diagnosedRoute: guide?.route)),
                .trying(route, position: index + 1, count: routes.count, cycle: cycle)]
    }

    /// The next route to apply: with the race strategy the first (in order) whose probe passed,
    /// else the next in order; routes whose probe failed while another passed are passed over
    /// (and recorded as failures of this pass).
    private mutating func nextRoute(at now: Duration) -> (index: Int, why: RouteChoice.Reason,
                                                        guide: (route: AssistRoute, diagnosis: RouteDiagnosis)?)? {
        // Routes a diagnosis rules out are passed over (and recorded as failures of this pass).
        for route in routes where !doneThisPass.contains(route.key) {
            guard let diagnosis = rulingOut(route.key, at: now) else { continue }
            doneThisPass.insert(route.key)
            failuresThisPass.append(RouteFailure(route: route, reason: .diagnosed, progress: progress, tag: tag, duration: .zero,
                                                 detail: nil, skipped: true, diagnosis: diagnosis))
        }
        // Then the routes that should pass what was diagnosed, those whose probe passed first.
        if strategy == .race, let guide = guidingDiagnosis(at: now) {
            let passing = routes.indices.filter { index in
                let route = routes[index]
                return !doneThisPass.contains(route.key) && !looksFailed(route.key) && guide.diagnosis.passes(route.transport)
            }
            if let index = passing.first(where: { probes[routes[$0].key]?.outcome == .passed }) ?? passing.first {
                return (index, .passesDiagnosis, guide)
            }
        }
        if strategy == .race {
            if let passed = routes.indices.first(where: { !doneThisPass.contains(routes[$0].key) && probes[routes[$0].key]?.outcome == .passed }) {
                return (passed, .probePassed, nil)
            }
        }
        let from = (currentIndex ?? -1) + 1
        for index in routes.indices where index >= from || strategy == .race {
            let route = routes[index]
            guard !doneThisPass.contains(route.key) else { continue }
            if looksFailed(route.key) {
                doneThisPass.insert(route.key)
                let failure = RouteFailure(route: route, reason: .probeFailed, progress: progress, tag: tag, duration: .zero,
                                           detail: nil, probe: probes[route.key], skipped: true)
                failuresThisPass.append(failure)
                continue
            }
            return (index, .nextInOrder, nil)
        }
        return nil
    }

    private mutating func moveOn(_ failure: RouteFailure, at now: Duration) -> [AssistEvent] {
        failuresThisPass.append(failure)
        lastFailure = failure
        var events: [AssistEvent] = [.movedOn(failure)]
        let skippedBefore = failuresThisPass.count
        let next = nextRoute(at: now)
        for skipped in failuresThisPass[skippedBefore...] { events.append(.movedOn(skipped)) }
        if let next {
            return events + tryRoute(at: next.index, now: now, why: next.why, guide: next.guide)
        }
        failedPasses += 1
        let delay = backoff.delay(afterFailedPasses: failedPasses)
        phase = .waiting(until: now + delay)
        events.append(.allFailed(failuresThisPass, retryIn: delay))
        return events
    }
}
