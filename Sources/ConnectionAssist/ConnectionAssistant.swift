import Foundation
import PosternLinkSpec
import PosternTor
import TransportBase

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
        /// For diagnosed: the technique (`RouteDiagnosis.Technique`: protocol-block, freeze, ...).
        public var diagnosis: String? = nil
    }

    /// What the network did to one route's connections, read as a censor's technique (the
    /// latest per route). Holds no bridge data: the words never include an address.
    public struct Diagnosis: Sendable, Hashable, Codable {
        public var route: RouteName
        public var routeKey: String
        /// `RouteDiagnosis.Technique`: protocol-block, freeze, address-block, interception, ...
        public var technique: String
        /// "seen" or "likely".
        public var confidence: String
        /// What was seen, e.g. "reset 31 ms after our first packet, nothing came back, then the address went silent".
        public var observed: String
        /// What it most likely is; empty when no technique is named.
        public var meaning: String
        /// Transports that should pass it here.
        public var passes: [String]
        /// True when the route cannot work here.
        public var rulesOutRoute: Bool
        /// The whole line: observed, meaning, what would pass.
        public var summary: String
        /// True when an earlier run on this network made it (``AssistMemory``); nil otherwise.
        public var remembered: Bool? = nil
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
    /// The latest diagnosis per route, in route order; nil when there is none.
    public var diagnoses: [Diagnosis]? = nil
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
    /// A SYN-only connect to an address (``ConfirmConnect``); nil when it said nothing.
    public typealias Confirm = @Sendable (TransportEndpoint) async -> CensorReader.Confirmation?

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
    /// Where the session's connections are reported (tor's dials through the in-process
    /// transports, probes, confirm connects); nil: no diagnosis from flows.
    private let flows: FlowLedger?
    /// The SYN-only connect after a reset or silence right after the first packet.
    private let confirm: Confirm?
    private var dialErrors: [String: [TransportError]] = [:]
    private var confirmations: [TransportEndpoint: CensorReader.Confirmation] = [:]
    private var confirmsInFlight: Set<TransportEndpoint> = []
    private var confirmAttempts: [TransportEndpoint: Int] = [:]
    private var diagnosisLog: [String: AssistSnapshot.Diagnosis] = [:]
    /// At most this many confirm connects per address, a second apart: only one that sent no packet
    /// (Postern's own gate held it back while a probe or tor's dial to the address was open) is
    /// tried again; one that left is answered (``CensorReader/Confirmation/of(_:)``), so at most one
    /// SYN per address comes from here.
    static var confirmLimit: Int { 8 }
    private var confirmNotBefore: [TransportEndpoint: Duration] = [:]
    /// Transports whose dials for tor run in this process and report to `flows`: the route being
    /// applied with one of them is not probed (tor's own dial is the evidence, and a probe of the
    /// same ip:port at the same moment would only hand a censor a second flow to judge).
    private let inProcess: Set<TransportName>
    /// Typed dial errors kept per route (the latest).
    static var dialErrorLimit: Int { 16 }
    static var reprobeDelay: Duration { .seconds(2) }
    static var reprobeLimit: Int { 3 }

    /// - Parameters:
    ///   - strategy: `.race` needs `probe`; without one it still leaves routes on failure signals.
    ///   - probeConcurrency: probes running at once (each bounded in time by the probe itself).
    public init(routes: [AssistRoute], tor: any TorControlling, clock: C, backoff: RouteSelector.Backoff = .standard,
                tickInterval: Duration = .milliseconds(250), strategy: AssistStrategy = .sequential,
                judge: FailureJudge = FailureJudge(), probe: RouteProbe? = nil, probeConcurrency: Int = 3,
                flows: FlowLedger? = nil, inProcess: Set<TransportName> = [], confirm: Confirm? = nil, remembered: [String: RememberedDiagnosis] = [:],
                wallClock: Date = Date(), apply: @escaping Apply) {
        selector = RouteSelector(routes: routes, backoff: backoff, strategy: strategy, judge: judge)
        // Diagnoses of earlier runs on this network: the selector skips their routes while they hold.
        for (key, kept) in remembered.sorted(by: { $0.key < $1.key }) {
            guard let route = routes.first(where: { $0.key == key }) else { continue }
            let age = max(0, wallClock.timeIntervalSince(kept.at))
            let diagnosis = kept.diagnosis
            selector.remember(diagnosis, forKey: key, at: .zero - .milliseconds(Int64(min(age, 1e9) * 1000)))
            diagnosisLog[key] = AssistSnapshot.Diagnosis(
                route: route.name, routeKey: key, technique: diagnosis.technique.rawValue, confidence: diagnosis.confidence.rawValue,
                observed: diagnosis.observed, meaning: diagnosis.meaning, passes: diagnosis.passes.map(\.rawValue),
                rulesOutRoute: true, summary: diagnosis.description, remembered: true)
        }
        self.tor = tor
        self.clock = clock
        origin = clock.now
        self.tickInterval = tickInterval
        self.apply = apply
        self.probe = strategy == .race ? probe : nil
        self.probeConcurrency = max(1, probeConcurrency)
        self.flows = flows
        self.inProcess = flows == nil ? [] : inProcess
        self.confirm = confirm
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
                await diagnose()
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

    /// A transport's typed dial error for tor (a rejected certificate is seen only here): evidence
    /// for the route using that transport, the current one when it does. Read at once, so that a
    /// definitive error ends the route without waiting for the next tick.
    public func recordDialError(_ error: TransportError, transport: String) async {
        let route = selector.currentRoute?.transport?.rawValue == transport ? selector.currentRoute
            : selector.routes.first { $0.transport?.rawValue == transport }
        guard let route else { return }
        var errors = dialErrors[route.key, default: []]
        errors.append(error)
        if errors.count > Self.dialErrorLimit { errors.removeFirst(errors.count - Self.dialErrorLimit) }
        dialErrors[route.key] = errors
        guard !applying else { return }
        await diagnose()
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

    /// Reads every route's evidence (``RouteEvidence``, ``CensorReader``) and hands each diagnosis
    /// to the selector, which reports what is new and leaves a route that cannot work; starts the
    /// confirm connects the protocol-block rule needs.
    private func diagnose() async {
        guard flows != nil || !dialErrors.isEmpty else { return }
        let reports = (flows?.finishedFlows() ?? []) + (flows?.openFlows() ?? [])
        let routes = selector.routes
        let current = selector.currentRoute
        if let confirm {
            let addresses = RouteEvidence.addresses(of: routes)
            // A probe confirms its own reset (AssistProbes: ProbeResult.confirmation); that answer
            // is the address's, whichever flow to it needs one: taken first, so that no second
            // connect is made for tor's dial to the same address.
            for flow in reports where flow.origin == .probe && confirmations[flow.peer] == nil {
                guard let key = RouteEvidence.routeKey(of: flow, routes: routes, addresses: addresses, current: current),
                      let answer = selector.probes[key]?.confirmation else { continue }
                confirmations[flow.peer] = answer
            }
            for flow in reports where confirmations[flow.peer] == nil && !confirmsInFlight.contains(flow.peer)
                && confirmAttempts[flow.peer, default: 0] < Self.confirmLimit && confirmNotBefore[flow.peer, default: .zero] <= now {
                guard let key = RouteEvidence.routeKey(of: flow, routes: routes, addresses: addresses, current: current),
                      let route = routes.first(where: { $0.key == key }),
                      RouteEvidence.needsConfirmation(flow, transport: route.transport) else { continue }
                // One confirm source per address: a probe confirms its own reset, so its flow waits
                // for the probe's result (taken above); ours only if the probe ended without one.
                if flow.origin == .probe, probesInFlight.keys.contains(where: { $0.hasSuffix("|\(key)") }) { continue }
                // Without the probe's answer (its result not in yet, or held back), ours goes through
                // the gate, which holds it back while the probe's own connection to the address is
                // open (no packet: nil, tried again a second later). Any answer that cost a SYN is
                // kept, so at most one confirm SYN per address leaves from here.
                let peer = flow.peer
                confirmsInFlight.insert(peer)
                confirmAttempts[peer, default: 0] += 1
                Task { [weak self] in
                    let answer = await confirm(peer)
                    await self?.confirmed(peer, answer)
                }
            }
        }
        let passed = Set(selector.probes.filter { $0.value.outcome == .passed }.map(\.key))
        var connected: String?
        if case .connected = selector.phase { connected = current?.key }
        let evidence = RouteEvidence.assemble(routes: routes, current: current, flows: reports, dialErrors: dialErrors,
                                              confirmations: confirmations, probesPassed: passed, connectedRoute: connected,
                                              currentWithoutProgress: selector.withoutProgress(at: now))
        for route in routes {
            guard let evidence = evidence[route.key], let diagnosis = CensorReader.diagnose(evidence) else { continue }
            await handle(selector.observe(diagnosis: diagnosis, route: route, at: now))
        }
    }

    private func confirmed(_ peer: TransportEndpoint, _ answer: CensorReader.Confirmation?) async {
        confirmsInFlight.remove(peer)
        if let answer { confirmations[peer] = answer } else { confirmNotBefore[peer] = now + .seconds(1) }
        guard !applying else { return }
        await diagnose()
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
        let due = reprobeDue.filter { $0.value <= now && !selector.rulesOut($0.key, at: now) }.map(\.key).sorted()
        for key in selector.unprobedKeys(at: now) + due where probesInFlight.count < probeConcurrency {
            reprobeDue[key] = nil
            let inFlightKey = "\(cycle)|\(key)"
            guard probesInFlight[inFlightKey] == nil, let route = selector.routes.first(where: { $0.key == key }) else { continue }
            // The route tor is applying through an in-process transport: its dials are in the
            // ledger, and the diagnosis reads them; a probe would be a second connection to the
            // same ip:port at the same moment (issue #22: at most 2 to a protocol-blocked bridge).
            if key == selector.currentRoute?.key, let transport = route.transport, inProcess.contains(transport) { continue }
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
            case .diagnosed(let route, let diagnosis):
                diagnosisLog[route.key] = AssistSnapshot.Diagnosis(
                    route: route.name, routeKey: route.key, technique: diagnosis.technique.rawValue,
                    confidence: diagnosis.confidence.rawValue, observed: diagnosis.observed, meaning: diagnosis.meaning,
                    passes: diagnosis.passes.map(\.rawValue), rulesOutRoute: diagnosis.rulesOutRoute, summary: diagnosis.description)
            case .trying(let route, _, _, let cycle):
                attempts.append(.init(route: route.name, routeKey: route.key, outcome: "trying", reason: nil, cycle: cycle,
                                      choice: lastChoice[route.key]?.rawValue))
            case .movedOn(let failure):
                if failure.skipped {
                    attempts.append(.init(route: failure.route.name, routeKey: failure.route.key, outcome: "moved-on",
                                          reason: failure.description, cycle: selector.cycle, reasonCode: failure.reason.rawValue,
                                          skipped: true, diagnosis: failure.diagnosis?.technique.rawValue))
                } else if let index = attempts.lastIndex(where: { $0.routeKey == failure.route.key && $0.outcome == "trying" }) {
                    attempts[index].outcome = "moved-on"
                    attempts[index].reason = failure.description
                    attempts[index].reasonCode = failure.reason.rawValue
                    if failure.reason == .connectionsFailing {
                        attempts[index].problem = failure.problem
                        attempts[index].failures = failure.failures
                        attempts[index].distinctPeers = failure.distinctPeers
                    }
                    attempts[index].diagnosis = failure.diagnosis?.technique.rawValue
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
                              strategy: selector.strategy, probes: probe == nil ? nil : probeLog,
                              diagnoses: diagnosisLog.isEmpty ? nil : selector.routes.compactMap { diagnosisLog[$0.key] })
    }

    private func publish(_ events: [AssistEvent]) {
        let snapshot = makeSnapshot()
        guard !events.isEmpty || snapshot != lastSnapshot else { return }
        lastSnapshot = snapshot
        let update = Update(events: events, snapshot: snapshot)
        for continuation in subscribers.values { continuation.yield(update) }
    }
}
