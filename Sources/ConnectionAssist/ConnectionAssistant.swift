import Foundation
import PosternTor

/// What connection assist is doing, for status files and `--json` output. Holds no bridge data.
public struct AssistSnapshot: Sendable, Hashable, Codable {
    public struct Attempt: Sendable, Hashable, Codable {
        public var route: RouteName
        public var routeKey: String
        /// "trying", "moved-on", "connected".
        public var outcome: String
        /// Why assist moved on, e.g. `stalled at 10% "conn_done" for 30 s`.
        public var reason: String?
        public var cycle: Int
        /// The typed reason (`RouteFailure.Reason`: no-progress, ceiling-reached,
        /// connections-failing, probe-failed, unavailable, settings-changed).
        public var reasonCode: String? = nil
        /// Why the route was chosen (`RouteChoice.Reason`: first-in-order, probe-passed, ...).
        public var choice: String? = nil
        /// For connections-failing: the main problem, the failures and distinct peers counted.
        public var problem: ConnectionProblem? = nil
        public var failures: Int? = nil
        public var distinctPeers: Int? = nil
        /// True when the route was passed over without being applied (its probe had failed).
        public var skipped: Bool? = nil
    }

    /// One probe of one route (race strategy).
    public struct Probe: Sendable, Hashable, Codable {
        public var route: RouteName
        public var routeKey: String
        public var cycle: Int
        public var result: ProbeResult
    }

    /// "idle", "trying", "waiting" (every route failed, backing off) or "connected".
    public var phase: String
    /// The route being tried (or used, once connected): its label.
    public var route: RouteName?
    public var routeKey: String?
    /// 1-based position of `route` in `order`.
    public var position: Int?
    /// Route labels in the order of this pass.
    public var order: [RouteName]
    public var orderKeys: [String]
    public var cycle: Int
    /// Every route of the last pass failed and assist is waiting before the next pass.
    public var allFailed: Bool
    public var retryInSeconds: Double?
    /// Why assist last moved on.
    public var lastMove: String?
    /// Every attempt of this run, oldest first (at most the last 50).
    public var attempts: [Attempt]
    /// "race" or "sequential".
    public var strategy: AssistStrategy? = nil
    /// Probe results, oldest first (at most the last 50).
    public var probes: [Probe]? = nil
}

/// Drives a `RouteSelector` against a running tor (`TorControlling`: `TorManager`, or a stand-in): feeds it tor's bootstrap reports and
/// clock ticks, and applies each route it picks through `apply` (which reconfigures the running
/// tor over its control socket). Publishes every decision and a snapshot on `updates()`.
public actor ConnectionAssistant<C: Clock> where C.Duration == Duration {
    /// One decision and the state after it.
    public struct Update: Sendable {
        public let events: [AssistEvent]
        public let snapshot: AssistSnapshot
    }

    public typealias Apply = @Sendable (AssistRoute) async throws -> Void
    /// Probes one route: touches only the route's own addresses, bounded in time.
    public typealias RouteProbe = @Sendable (AssistRoute) async -> ProbeResult

    private var selector: RouteSelector
    private let tor: any TorControlling
    private let clock: C
    private let origin: C.Instant
    private let tickInterval: Duration
    private let apply: Apply
    private var attempts: [AssistSnapshot.Attempt] = []
    private var subscribers: [UUID: AsyncStream<Update>.Continuation] = [:]
    private var lastSnapshot: AssistSnapshot?
    /// A route being applied: no ticks are judged meanwhile.
    private var applying = false
    private let probe: RouteProbe?
    private let probeConcurrency: Int
    private var probesInFlight: [String: Task<Void, Never>] = [:]
    private var probeLog: [AssistSnapshot.Probe] = []
    private var lastChoice: [String: RouteChoice.Reason] = [:]
    private var probesDuringApply: [(ProbeResult, String, Int)] = []
    private var reprobeDue: [String: Duration] = [:]
    private var reprobeCount: [String: Int] = [:]
    private var reprobeCycle = 0
    static var reprobeDelay: Duration { .seconds(2) }
    static var reprobeLimit: Int { 3 }

    /// - Parameters:
    ///   - strategy: `.race` needs `probe`; without one it still leaves routes on failure signals.
    ///   - probeConcurrency: probes running at once (each bounded in time by the probe itself).
    public init(routes: [AssistRoute], tor: any TorControlling, clock: C, backoff: RouteSelector.Backoff = .standard,
                tickInterval: Duration = .milliseconds(250), strategy: AssistStrategy = .sequential,
                judge: FailureJudge = FailureJudge(), probe: RouteProbe? = nil, probeConcurrency: Int = 3,
                apply: @escaping Apply) {
        selector = RouteSelector(routes: routes, backoff: backoff, strategy: strategy, judge: judge)
        self.tor = tor
        self.clock = clock
        origin = clock.now
        self.tickInterval = tickInterval
        self.apply = apply
        self.probe = strategy == .race ? probe : nil
        self.probeConcurrency = max(1, probeConcurrency)
    }

    /// Every update from now on (each one carries the full snapshot).
    public func updates() -> AsyncStream<Update> {
        let (stream, continuation) = AsyncStream.makeStream(of: Update.self)
        let id = UUID()
        subscribers[id] = continuation
        if let lastSnapshot { continuation.yield(Update(events: [], snapshot: lastSnapshot)) }
        continuation.onTermination = { [weak self] _ in Task { await self?.unsubscribe(id) } }
        return stream
    }

    private func unsubscribe(_ id: UUID) { subscribers[id] = nil }

    public var snapshot: AssistSnapshot { makeSnapshot() }

    /// Runs until the task is cancelled: applies the first route, then watches bootstrap reports
    /// and the clock. Once connected it keeps watching (settings changes may restart the search).
    public func run() async {
        let statuses = await tor.statusUpdates(everyChange: false)
        let initial = await tor.currentStatus
        await handle(selector.start(at: now, progress: initial.bootstrapProgress, tag: initial.bootstrapTag))
        let signals = await tor.connectionSignals()
        let observer = Task { [weak self] in
            for await status in statuses {
                await self?.observe(status)
            }
        }
        let signalObserver = Task { [weak self] in
            for await signal in signals {
                await self?.report(signal)
            }
        }
        defer {
            observer.cancel()
            signalObserver.cancel()
        }
        while !Task.isCancelled {
            do { try await clock.sleep(for: tickInterval) } catch { break }
            if !applying {
                await handle(selector.tick(at: now))
            }
        }
        for task in probesInFlight.values { task.cancel() }
        probesInFlight = [:]
        for continuation in subscribers.values { continuation.finish() }
        subscribers = [:]
    }

    /// A failure signal from outside tor's control events (e.g. a transport's failed dial);
    /// with `transport`, it counts only while the current route uses that transport.
    public func report(_ signal: ConnectionSignal, transport: String? = nil) async {
        guard !applying else { return }
        if let transport, selector.currentRoute?.transport?.rawValue != transport { return }
        await handle(selector.observe(signal: signal, at: now))
    }

    /// New routes from changed settings.
    public func replaceRoutes(_ routes: [AssistRoute]) async {
        await handle(selector.replaceRoutes(routes, at: now))
        publish([])
    }

    // MARK: Internals

    private var now: Duration { origin.duration(to: clock.now) }

    private func observe(_ status: TorStatus) async {
        let events = selector.observe(progress: status.bootstrapProgress, tag: status.bootstrapTag,
                                      ready: status.isReady, at: now)
        await handle(events)
    }

    /// Records and publishes events, applying each route picked; a route that cannot be applied is
    /// failed at once, which may pick another.
    private func handle(_ initial: [AssistEvent]) async {
        defer { scheduleProbes() }
        var pending = initial
        while !pending.isEmpty {
            let events = pending
            pending = []
            record(events)
            publish(events)
            for case .trying(let route, _, _, _) in events {
                applying = true
                do {
                    try await apply(route)
                    applying = false
                } catch {
                    applying = false
                    pending += selector.routeUnavailable(String(describing: error), at: now)
                }
            }
            // Probe results that arrived while a route was being applied.
            let deferred = probesDuringApply
            probesDuringApply = []
            for (result, key, cycle) in deferred {
                pending += selector.probeFinished(result, forKey: key, cycle: cycle, at: now)
            }
            if !deferred.isEmpty { recheckIfStale() }
        }
    }

    /// Starts probes for routes not yet probed in this pass, at most `probeConcurrency` at once;
    /// none once connected.
    private func scheduleProbes() {
        guard let probe else { return }
        if case .connected = selector.phase {
            for task in probesInFlight.values { task.cancel() }
            probesInFlight = [:]
            return
        }
        guard case .trying = selector.phase else { return }
        let cycle = selector.cycle
        if reprobeCycle != cycle {
            reprobeCycle = cycle
            reprobeDue = [:]
            reprobeCount = [:]
        }
        let due = reprobeDue.filter { $0.value <= now }.map(\.key).sorted()
        for key in selector.unprobedKeys + due where probesInFlight.count < probeConcurrency {
            reprobeDue[key] = nil
            let inFlightKey = "\(cycle)|\(key)"
            guard probesInFlight[inFlightKey] == nil, let route = selector.routes.first(where: { $0.key == key }) else { continue }
            selector.probeStarted(forKey: key, cycle: cycle)
            probesInFlight[inFlightKey] = Task { [weak self] in
                let result = await probe(route)
                await self?.probeDone(result, key: key, cycle: cycle)
            }
        }
    }

    private func probeDone(_ result: ProbeResult, key: String, cycle: Int) async {
        probesInFlight["\(cycle)|\(key)"] = nil
        guard !Task.isCancelled else { return }
        if let route = selector.routes.first(where: { $0.key == key }) {
            probeLog.append(.init(route: route.name, routeKey: key, cycle: cycle, result: result))
            if probeLog.count > 50 { probeLog.removeFirst(probeLog.count - 50) }
        }
        // A failed probe is repeated a few times in the pass (the network may have just come
        // up, or a hiccup may have cost one SYN): after 2 s, then 4 s, then 8 s. Only when it
        // failed at the connect: a reset or silence after our first packet is what a censor that
        // judges first packets does, and another handshake would only add to its evidence (one
        // handshake probe per ip:port per pass; docs/plans/CENSOR-AWARE-ASSIST.md §3).
        if result.outcome == .failed, result.mayBeRepeated, cycle == reprobeCycle, reprobeCount[key, default: 0] < Self.reprobeLimit {
            let count = reprobeCount[key, default: 0]
            reprobeCount[key] = count + 1
            reprobeDue[key] = now + Self.reprobeDelay * (1 << count)
        }
        if applying {
            probesDuringApply.append((result, key, cycle))
            return
        }
        await handle(selector.probeFinished(result, forKey: key, cycle: cycle, at: now))
        recheckIfStale()
    }

    /// The current route's failed probe is older than another route's pass: probe it again at
    /// once rather than leave it on what may have been a network that was not up yet.
    private func recheckIfStale() {
        guard selector.currentFailureNeedsRecheck, let key = selector.currentRoute?.key else { return }
        reprobeDue[key] = now
        scheduleProbes()
    }

    private func record(_ events: [AssistEvent]) {
        for event in events {
            switch event {
            case .chose(let choice):
                lastChoice[choice.route.key] = choice.reason
            case .probed:
                break
            case .trying(let route, _, _, let cycle):
                attempts.append(.init(route: route.name, routeKey: route.key, outcome: "trying", reason: nil, cycle: cycle,
                                      choice: lastChoice[route.key]?.rawValue))
            case .movedOn(let failure):
                if failure.skipped {
                    attempts.append(.init(route: failure.route.name, routeKey: failure.route.key, outcome: "moved-on",
                                          reason: failure.description, cycle: selector.cycle, reasonCode: failure.reason.rawValue,
                                          skipped: true))
                } else if let index = attempts.lastIndex(where: { $0.routeKey == failure.route.key && $0.outcome == "trying" }) {
                    attempts[index].outcome = "moved-on"
                    attempts[index].reason = failure.description
                    attempts[index].reasonCode = failure.reason.rawValue
                    if failure.reason == .connectionsFailing {
                        attempts[index].problem = failure.problem
                        attempts[index].failures = failure.failures
                        attempts[index].distinctPeers = failure.distinctPeers
                    }
                }
            case .connected(let route, _):
                if let index = attempts.lastIndex(where: { $0.routeKey == route.key }) {
                    attempts[index].outcome = "connected"
                }
            case .allFailed:
                break
            }
        }
        if attempts.count > 50 { attempts.removeFirst(attempts.count - 50) }
    }

    private func makeSnapshot() -> AssistSnapshot {
        let phase: String
        var retry: Double?
        switch selector.phase {
        case .idle: phase = "idle"
        case .trying: phase = "trying"
        case .connected: phase = "connected"
        case .waiting(let until):
            phase = "waiting"
            retry = max(0, (until - now).secondsValue)
        }
        let route = selector.currentRoute
        return AssistSnapshot(phase: phase, route: route?.name, routeKey: route?.key,
                              position: selector.currentIndex.map { $0 + 1 },
                              order: selector.routes.map(\.name), orderKeys: selector.routes.map(\.key),
                              cycle: selector.cycle, allFailed: selector.allFailed, retryInSeconds: retry,
                              lastMove: selector.lastFailure.map { "\($0.route.label): \($0)" }, attempts: attempts,
                              strategy: selector.strategy, probes: probe == nil ? nil : probeLog)
    }

    private func publish(_ events: [AssistEvent]) {
        let snapshot = makeSnapshot()
        guard !events.isEmpty || snapshot != lastSnapshot else { return }
        lastSnapshot = snapshot
        let update = Update(events: events, snapshot: snapshot)
        for continuation in subscribers.values { continuation.yield(update) }
    }
}
