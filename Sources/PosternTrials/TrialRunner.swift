import PosternLinkSpec
import PosternSystem
import BridgeConfig
import Foundation
import Synchronization
import TrialAnalysis

/// A route under trial: `direct`, or a transport with the bridges it may use.
public struct TrialRoute: Sendable, Equatable {
    public var name: String
    /// Bridge lines the child gets (empty for direct).
    public var bridges: [BridgeLine]
    /// How long a trial may take to reach 100 % before it counts as failed.
    public var timeout: Duration
    /// The child's `--transport`: the name, or NAME for a `plugin:NAME` route.
    public var transport: String
    /// External transports the child gets in its settings (`plugin:NAME`, or a plugin that serves
    /// the transport for `run` too).
    public var plugins: [TransportPlugin]

    public init(name: String, bridges: [BridgeLine], timeout: Duration, transport: String? = nil, plugins: [TransportPlugin] = []) {
        self.name = name
        self.bridges = bridges
        self.timeout = timeout
        self.transport = transport ?? name
        self.plugins = plugins
    }
}

/// Runs the schedule: trials in order, at most `parallel` children at a time, each with a fresh
/// data directory (or, warm, a copy of the cached directory of the route's last good trial).
///
/// A try that fails for the harness's reasons (ABResult.HarnessError) is recorded apart and the
/// trial is run again, up to `harnessRetries` more times; a trial that never gets a clean try has
/// no result. Neither counts for or against its route.
public final class TrialRunner: Sendable {
    public struct Plan: Sendable {
        public var routes: [TrialRoute]
        public var trialsPerRoute: Int
        public var parallel: Int
        public var randomOrder: Bool
        public var seed: UInt64
        public var warm: Bool
        public var probe: ProbeFetch?
        public var torOptionsFile: String?
        public var unsafeLogging: Bool
        public var directory: URL
        /// The `postern` binary the children run.
        public var executable: URL
        /// Further tries of a trial after a harness error.
        public var harnessRetries: Int
        /// Faults the harness plants in itself, for tests that check they are told apart.
        public var plantedFaults: PlantedFaults

        public init(routes: [TrialRoute], trialsPerRoute: Int, parallel: Int, randomOrder: Bool, seed: UInt64, warm: Bool,
                    probe: ProbeFetch?, torOptionsFile: String?, unsafeLogging: Bool, directory: URL,
                    executable: URL = ChildRun.currentExecutable, harnessRetries: Int = 2, plantedFaults: PlantedFaults = .none) {
            self.routes = routes
            self.trialsPerRoute = trialsPerRoute
            self.parallel = parallel
            self.randomOrder = randomOrder
            self.seed = seed
            self.warm = warm
            self.probe = probe
            self.torOptionsFile = torOptionsFile
            self.unsafeLogging = unsafeLogging
            self.directory = directory
            self.executable = executable
            self.harnessRetries = harnessRetries
            self.plantedFaults = plantedFaults
        }
    }

    /// A port collision planted on purpose: the first `tries` child starts of `route` are told to
    /// bind `occupiedPort` (which the test holds) instead of a port of their own choosing, as the
    /// old harness effectively did when another program took the port it had picked.
    public struct PlantedFaults: Sendable {
        public var route: String?
        public var occupiedPort: UInt16
        public var tries: Int

        public init(route: String, occupiedPort: UInt16, tries: Int) {
            self.route = route
            self.occupiedPort = occupiedPort
            self.tries = tries
        }

        public static let none = PlantedFaults(route: nil, occupiedPort: 0, tries: 0)

        private init(route: String?, occupiedPort: UInt16, tries: Int) {
            self.route = route
            self.occupiedPort = occupiedPort
            self.tries = tries
        }
    }

    public struct Scheduled: Sendable {
        public var index: Int
        public var route: TrialRoute
        public var attempt: Int
    }

    /// What the live view shows of one running trial.
    public struct Live: Sendable {
        public var label: String
        public var progress: Int
        public var tag: String
    }

    /// What a run produced: the trials with a result for their route, and the harness's failures.
    public struct Outcome: Sendable {
        public var trials: [ABResult.Trial]
        public var harnessErrors: [ABResult.HarnessError]
        /// Trials cut short by an interruption: they say nothing about their route.
        public var interrupted: Int
    }

    public typealias ProgressHandler = @Sendable (_ running: [Live], _ finished: [ABResult.Trial], _ justFinished: ABResult.Trial?,
                                                  _ harnessError: ABResult.HarnessError?) -> Void

    private let plan: Plan
    private let onProgress: ProgressHandler
    private let state = Mutex(State())

    private struct State {
        var running: [Int: Live] = [:]
        var finished: [ABResult.Trial] = []
        var harnessErrors: [ABResult.HarnessError] = []
        var interruptedTrials = 0
        /// Route name → cached directory of its last successful trial.
        var warmCache: [String: URL] = [:]
        var children: [Int: ChildRun] = [:]
        var interrupted = false
        var plantedLeft = 0
    }

    public init(plan: Plan, onProgress: @escaping ProgressHandler) {
        self.plan = plan
        self.onProgress = onProgress
        state.withLock { $0.plantedLeft = plan.plantedFaults.tries }
    }

    /// Interleaved A B C A B C …, or that list shuffled with the seed (TrialSchedule).
    public static func schedule(routes: [TrialRoute], trialsPerRoute: Int, randomOrder: Bool, seed: UInt64) -> [Scheduled] {
        TrialSchedule.make(routes: routes.count, trialsPerRoute: trialsPerRoute, shuffleSeed: randomOrder ? seed : nil)
            .enumerated().map { position, slot in
                Scheduled(index: position + 1, route: routes[slot.route], attempt: slot.attempt)
            }
    }

    public func run() async -> Outcome {
        let schedule = Self.schedule(routes: plan.routes, trialsPerRoute: plan.trialsPerRoute, randomOrder: plan.randomOrder,
                                     seed: plan.seed)
        await withTaskGroup(of: Void.self) { group in
            var next = 0
            while next < schedule.count || !group.isEmpty {
                while next < schedule.count, state.withLock({ $0.running.count < plan.parallel && !$0.interrupted }) {
                    let item = schedule[next]
                    next += 1
                    state.withLock { $0.running[item.index] = Live(label: "\(item.route.name)#\(item.attempt)", progress: 0, tag: "starting") }
                    group.addTask { await self.runTrial(item) }
                    // Spreads the children's starts a little, so they do not contend for the same
                    // instant of CPU (2-core machines) and the first byte is the route's, not ours.
                    try? await Task.sleep(for: .milliseconds(200))
                }
                if state.withLock({ $0.interrupted }) { next = schedule.count }
                _ = await group.next()
            }
        }
        let (finished, errors, interrupted) = state.withLock { ($0.finished, $0.harnessErrors, $0.interruptedTrials) }
        let trials = finished.sorted { $0.index < $1.index }
        let harnessErrors = errors.sorted { lhs, rhs in
            lhs.trial != rhs.trial ? lhs.trial < rhs.trial : lhs.attemptTry < rhs.attemptTry
        }
        return Outcome(trials: trials, harnessErrors: harnessErrors, interrupted: interrupted)
    }

    /// Stops every running child and starts no more (SIGINT or SIGTERM to `postern ab`). Trials
    /// cut short are left out of the results.
    public func interrupt() async {
        let children = state.withLock { state in
            state.interrupted = true
            return Array(state.children.values)
        }
        for child in children { await child.stop(grace: .seconds(2)) }
    }

    /// Removes the warm-start caches (tor's documents, not results).
    public func removeCaches() {
        let manager = FileManager.default
        for name in (try? manager.contentsOfDirectory(atPath: plan.directory.path)) ?? [] where name.hasPrefix(".cache-") {
            try? manager.removeItem(at: plan.directory.appendingPathComponent(name))
        }
    }

    public var wasInterrupted: Bool { state.withLock { $0.interrupted } }

    private func report(justFinished: ABResult.Trial? = nil, harnessError: ABResult.HarnessError? = nil) {
        let (running, finished) = state.withLock { state in
            (state.running.sorted { $0.key < $1.key }.map(\.value), state.finished)
        }
        onProgress(running, finished, justFinished, harnessError)
    }

    /// What one try of a trial came to.
    enum TryResult {
        case trial(ABResult.Trial)
        case harness(ABResult.HarnessError.Code, String)
        case interrupted
    }

    private func runTrial(_ item: Scheduled) async {
        var tryNumber = 1
        while true {
            let result = await execute(item, tryNumber: tryNumber)
            switch result {
            case .trial(var trial):
                trial.harnessRetries = tryNumber > 1 ? tryNumber - 1 : nil
                state.withLock { state in
                    state.running[item.index] = nil
                    state.finished.append(trial)
                }
                report(justFinished: trial)
                return
            case .interrupted:
                state.withLock { state in
                    state.running[item.index] = nil
                    state.interruptedTrials += 1
                }
                report()
                return
            case .harness(let code, let message):
                let retry = tryNumber <= plan.harnessRetries && !state.withLock({ $0.interrupted })
                let error = ABResult.HarnessError(trial: item.index, route: item.route.name, attempt: item.attempt, attemptTry: tryNumber,
                                                  code: code, message: message, retried: retry)
                state.withLock { state in
                    state.harnessErrors.append(error)
                    if !retry { state.running[item.index] = nil }
                }
                report(harnessError: error)
                guard retry else { return }
                tryNumber += 1
            }
        }
    }

    /// The `--socks` of the next child of `route`: its own port, unless a planted fault is due.
    private func socksArgument(route: String) -> String {
        let faults = plan.plantedFaults
        guard faults.route == route else { return "127.0.0.1:auto" }
        let planted = state.withLock { state in
            guard state.plantedLeft > 0 else { return false }
            state.plantedLeft -= 1
            return true
        }
        return planted ? "127.0.0.1:\(faults.occupiedPort)" : "127.0.0.1:auto"
    }

    private func execute(_ item: Scheduled, tryNumber: Int) async -> TryResult {
        var name = String(format: "trial-%03d-%@", item.index, item.route.name)
        if tryNumber > 1 { name += "-try\(tryNumber)" }
        let directory = plan.directory.appendingPathComponent(name)
        let warmSource = plan.warm ? state.withLock { $0.warmCache[item.route.name] } : nil
        var trial = ABResult.Trial(index: item.index, route: item.route.name, attempt: item.attempt, warm: warmSource != nil,
                                   succeeded: false, milestones: [], eventsFile: "\(name)/events.jsonl", socksPort: nil,
                                   startedAt: Date())
        let child: ChildRun
        do throws(TrialError) {
            child = try ChildRun(.init(directory: directory, transport: item.route.transport, bridges: item.route.bridges,
                                       plugins: item.route.plugins, torOptionsFile: plan.torOptionsFile, unsafeLogging: plan.unsafeLogging,
                                       warmFrom: warmSource, executable: plan.executable, socks: socksArgument(route: item.route.name)))
        } catch {
            return .harness(error.code == .spawn ? .childStart : .childSetup, "could not start the child: \(error.message)")
        }
        let index = item.index
        let alreadyInterrupted = state.withLock { state in
            state.children[index] = child
            return state.interrupted
        }
        if alreadyInterrupted { await child.stop(grace: .zero) }
        let outcome = await child.waitForReady(timeout: item.route.timeout) { [self] events in
            if let last = events.last(where: { $0.event == "bootstrap" }) {
                state.withLock { $0.running[index]?.progress = last.progress ?? 0; $0.running[index]?.tag = last.tag ?? "" }
                report()
            }
        }
        let events = child.events
        Self.fill(&trial, from: events)
        var harness: (ABResult.HarnessError.Code, String)?
        switch outcome {
        case .ready(let port):
            trial.succeeded = true
            trial.socksPort = port
            if let probe = plan.probe {
                do throws(ProbeFetch.Failure) {
                    let result = try await probe.run(socksPort: port)
                    trial.probeFirstByteSeconds = result.timeToFirstByte
                    trial.probeBytes = result.bodyBytes
                    trial.throughputBytesPerSecond = result.throughput
                } catch {
                    if error.kind == .socksUnreachable {
                        harness = (.socksUnreachable, error.message)
                    } else {
                        trial.succeeded = false
                        trial.probeFirstByteSeconds = error.timeToFirstByte
                        trial.probeBytes = error.bodyBytes
                        trial.failure = .init(stage: .afterBootstrap, progress: 100, tag: "done", reason: "the probe download failed: \(error.message)",
                                              probe: error.kind, bodyBytes: error.bodyBytes)
                    }
                }
            }
        case .failed(let reason, let harnessCode):
            if let harnessCode { harness = (harnessCode, reason) }
            trial.failure = Self.failure(events: events, reason: reason)
        case .timedOut:
            trial.failure = Self.failure(events: events, reason: "no 100% within \(item.route.timeout.seconds.formatted()) s")
        }
        let interrupted = !trial.succeeded && state.withLock { $0.interrupted }
        await child.stop()
        _ = state.withLock { $0.children.removeValue(forKey: index) }
        if trial.succeeded && plan.warm {
            // Keep this trial's cached directory for the next warm start of the route: a new
            // directory each time, never changed once published, so a trial starting meanwhile
            // copies a complete one.
            let cache = plan.directory.appendingPathComponent(".cache-\(item.route.name)-\(item.index)")
            ChildRun.copyCachedDirectory(from: child.dataDirectory, to: cache)
            state.withLock { $0.warmCache[item.route.name] = cache }
        }
        child.cleanUp()
        if interrupted { return .interrupted }
        if let harness { return .harness(harness.0, harness.1) }
        return .trial(trial)
    }

    /// Milestones, first byte and time to 100 % as the child itself recorded them.
    public static func fill(_ trial: inout ABResult.Trial, from events: [RunEvent]) {
        trial.milestones = events.filter { $0.event == "bootstrap" }.map {
            ABResult.Milestone(progress: $0.progress ?? 0, tag: $0.tag ?? "", seconds: $0.t)
        }
        trial.firstByteSeconds = events.first { $0.event == "first-byte" }?.t
        trial.bootstrapSeconds = events.first { $0.event == "ready" }?.t
    }

    /// Where the trial stalled and why: the last milestone and tor's last warning, if any.
    public static func failure(events: [RunEvent], reason: String) -> ABResult.Failure {
        let last = events.last { $0.event == "bootstrap" }
        var why = reason
        if let warning = events.last(where: { $0.event == "warning" || $0.event == "stalled" })?.warning {
            why += "; last problem: \(warning)"
        } else if let transport = events.last(where: { $0.event == "transport" && $0.kind == "dial-failed" })?.message {
            why += "; transport: \(transport)"
        }
        return ABResult.Failure(stage: .bootstrap, progress: last?.progress, tag: last?.tag, reason: why)
    }
}
