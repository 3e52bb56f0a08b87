import Foundation

/// What connection assist is doing, for status files and `--json` output. Holds no bridge data.
public struct AssistSnapshot: Sendable, Hashable, Codable {
    public struct Attempt: Sendable, Hashable, Codable {
        public var route: String
        public var routeKey: String
        /// "trying", "moved-on", "connected".
        public var outcome: String
        /// Why assist moved on, e.g. `stalled at 10% "conn_done" for 30 s`.
        public var reason: String?
        public var cycle: Int
    }

    /// "idle", "trying", "waiting" (every route failed, backing off) or "connected".
    public var phase: String
    /// The route being tried (or used, once connected): its label.
    public var route: String?
    public var routeKey: String?
    /// 1-based position of `route` in `order`.
    public var position: Int?
    /// Route labels in the order of this pass.
    public var order: [String]
    public var orderKeys: [String]
    public var cycle: Int
    /// Every route of the last pass failed and assist is waiting before the next pass.
    public var allFailed: Bool
    public var retryInSeconds: Double?
    /// Why assist last moved on.
    public var lastMove: String?
    /// Every attempt of this run, oldest first (at most the last 50).
    public var attempts: [Attempt]
}

/// Drives a `RouteSelector` against a running `TorManager`: feeds it tor's bootstrap reports and
/// clock ticks, and applies each route it picks through `apply` (which reconfigures the running
/// tor over its control socket). Publishes every decision and a snapshot on `updates()`.
public actor ConnectionAssistant<C: Clock> where C.Duration == Duration {
    /// One decision and the state after it.
    public struct Update: Sendable {
        public let events: [AssistEvent]
        public let snapshot: AssistSnapshot
    }

    public typealias Apply = @Sendable (AssistRoute) async throws -> Void

    private var selector: RouteSelector
    private let manager: TorManager
    private let clock: C
    private let origin: C.Instant
    private let tickInterval: Duration
    private let apply: Apply
    private var attempts: [AssistSnapshot.Attempt] = []
    private var subscribers: [UUID: AsyncStream<Update>.Continuation] = [:]
    private var lastSnapshot: AssistSnapshot?
    /// A route being applied: no ticks are judged meanwhile.
    private var applying = false

    public init(routes: [AssistRoute], manager: TorManager, clock: C, backoff: RouteSelector.Backoff = .standard,
                tickInterval: Duration = .milliseconds(250), apply: @escaping Apply) {
        selector = RouteSelector(routes: routes, backoff: backoff)
        self.manager = manager
        self.clock = clock
        origin = clock.now
        self.tickInterval = tickInterval
        self.apply = apply
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
        let statuses = await manager.statusUpdates()
        let initial = await manager.currentStatus
        await handle(selector.start(at: now, progress: initial.bootstrapProgress, tag: initial.bootstrapTag))
        let observer = Task { [weak self] in
            for await status in statuses {
                await self?.observe(status)
            }
        }
        defer { observer.cancel() }
        while !Task.isCancelled {
            do { try await clock.sleep(for: tickInterval) } catch { break }
            if !applying { await handle(selector.tick(at: now)) }
        }
        for continuation in subscribers.values { continuation.finish() }
        subscribers = [:]
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
        }
    }

    private func record(_ events: [AssistEvent]) {
        for event in events {
            switch event {
            case .trying(let route, _, _, let cycle):
                attempts.append(.init(route: route.label, routeKey: route.key, outcome: "trying", reason: nil, cycle: cycle))
            case .movedOn(let failure):
                if let index = attempts.lastIndex(where: { $0.routeKey == failure.route.key && $0.outcome == "trying" }) {
                    attempts[index].outcome = "moved-on"
                    attempts[index].reason = failure.description
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
        return AssistSnapshot(phase: phase, route: route?.label, routeKey: route?.key,
                              position: selector.currentIndex.map { $0 + 1 },
                              order: selector.routes.map(\.label), orderKeys: selector.routes.map(\.key),
                              cycle: selector.cycle, allFailed: selector.allFailed, retryInSeconds: retry,
                              lastMove: selector.lastFailure.map { "\($0.route.label): \($0)" }, attempts: attempts)
    }

    private func publish(_ events: [AssistEvent]) {
        let snapshot = makeSnapshot()
        guard !events.isEmpty || snapshot != lastSnapshot else { return }
        lastSnapshot = snapshot
        let update = Update(events: events, snapshot: snapshot)
        for continuation in subscribers.values { continuation.yield(update) }
    }
}
