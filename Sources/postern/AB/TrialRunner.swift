import PosternRuntime
import BridgeConfig
import Foundation
import Synchronization
import TrialAnalysis

/// A route under trial: `direct`, or a transport with the bridges it may use.
struct TrialRoute: Sendable, Equatable {
    var name: String
    /// Bridge lines the child gets (empty for direct).
    var bridges: [BridgeLine]
    /// Seconds a trial may take to reach 100 % before it counts as failed.
    var timeout: Duration
    /// The child's `--transport`: the name, or NAME for a `plugin:NAME` route.
    var transport: String
    /// External transports the child gets in its settings (`plugin:NAME`, or a plugin that serves
    /// the transport for `run` too).
    var plugins: [TransportPlugin]

    init(name: String, bridges: [BridgeLine], timeout: Duration, transport: String? = nil, plugins: [TransportPlugin] = []) {
        self.name = name
        self.bridges = bridges
        self.timeout = timeout
        self.transport = transport ?? name
        self.plugins = plugins
    }
}

/// Runs the schedule: trials in order, at most `parallel` children at a time, each with a fresh
/// data directory (or, warm, a copy of the cached directory of the route's last good trial).
final class TrialRunner: Sendable {
    struct Plan: Sendable {
        var routes: [TrialRoute]
        var trialsPerRoute: Int
        var parallel: Int
        var randomOrder: Bool
        var seed: UInt64
        var warm: Bool
        var probe: ProbeFetch?
        var torOptionsFile: String?
        var unsafeLogging: Bool
        var directory: URL
    }

    struct Scheduled: Sendable {
        var index: Int
        var route: TrialRoute
        var attempt: Int
    }

    /// What the live view shows of one running trial.
    struct Live: Sendable {
        var label: String
        var progress: Int
        var tag: String
    }

    private let plan: Plan
    private let onProgress: @Sendable (_ running: [Live], _ finished: [ABResult.Trial], _ justFinished: ABResult.Trial?) -> Void
    private let state = Mutex(State())

    private struct State {
        var running: [Int: Live] = [:]
        var finished: [ABResult.Trial] = []
        var usedPorts: Set<UInt16> = []
        /// Route name → cached directory of its last successful trial.
        var warmCache: [String: URL] = [:]
        var children: [Int: ChildRun] = [:]
        var interrupted = false
    }

    init(plan: Plan, onProgress: @escaping @Sendable ([Live], [ABResult.Trial], ABResult.Trial?) -> Void) {
        self.plan = plan
        self.onProgress = onProgress
    }

    /// Interleaved A B C A B C …, or that list shuffled with the seed (TrialSchedule).
    static func schedule(routes: [TrialRoute], trialsPerRoute: Int, randomOrder: Bool, seed: UInt64) -> [Scheduled] {
        TrialSchedule.make(routes: routes.count, trialsPerRoute: trialsPerRoute, shuffleSeed: randomOrder ? seed : nil)
            .enumerated().map { position, slot in
                Scheduled(index: position + 1, route: routes[slot.route], attempt: slot.attempt)
            }
    }

    func run() async -> [ABResult.Trial] {
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
        return state.withLock { $0.finished }.sorted { $0.index < $1.index }
    }

    /// Stops every running child and starts no more (SIGINT or SIGTERM to `postern ab`). Trials
    /// cut short count as failed with the reason "interrupted".
    func interrupt() async {
        let children = state.withLock { state in
            state.interrupted = true
            return Array(state.children.values)
        }
        for child in children { await child.stop(grace: .seconds(2)) }
    }

    /// Removes the warm-start caches (tor's documents, not results).
    func removeCaches() {
        let manager = FileManager.default
        for name in (try? manager.contentsOfDirectory(atPath: plan.directory.path)) ?? [] where name.hasPrefix(".cache-") {
            try? manager.removeItem(at: plan.directory.appendingPathComponent(name))
        }
    }

    var wasInterrupted: Bool { state.withLock { $0.interrupted } }

    private func report(justFinished: ABResult.Trial? = nil) {
        let (running, finished) = state.withLock { state in
            (state.running.sorted { $0.key < $1.key }.map(\.value), state.finished)
        }
        onProgress(running, finished, justFinished)
    }

    private func runTrial(_ item: Scheduled) async {
        let trial = await execute(item)
        state.withLock { state in
            state.running[item.index] = nil
            state.finished.append(trial)
            state.usedPorts.remove(trial.socksPort)
        }
        report(justFinished: trial)
    }

    private func freePort() -> UInt16 {
        for _ in 0..<20 {
            guard let port = try? ChildRun.freePort() else { continue }
            let fresh = state.withLock { state in state.usedPorts.insert(port).inserted }
            if fresh { return port }
        }
        return 0
    }

    private func execute(_ item: Scheduled) async -> ABResult.Trial {
        let name = String(format: "trial-%03d-%@", item.index, item.route.name)
        let directory = plan.directory.appendingPathComponent(name)
        let port = freePort()
        let warmSource = plan.warm ? state.withLock { $0.warmCache[item.route.name] } : nil
        var trial = ABResult.Trial(index: item.index, route: item.route.name, attempt: item.attempt, warm: warmSource != nil,
                                   succeeded: false, milestones: [], eventsFile: "\(name)/events.jsonl", socksPort: port,
                                   startedAt: Date())
        let child: ChildRun
        do {
            child = try ChildRun(.init(directory: directory, transport: item.route.transport, bridges: item.route.bridges,
                                       plugins: item.route.plugins, socksPort: port, torOptionsFile: plan.torOptionsFile, unsafeLogging: plan.unsafeLogging,
                                       warmFrom: warmSource))
        } catch {
            trial.failure = .init(stage: "start", reason: "could not start the child: \(error)")
            return trial
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
        switch outcome {
        case .ready:
            trial.succeeded = true
            if let probe = plan.probe {
                do {
                    let result = try await probe.run(socksPort: port)
                    trial.probeFirstByteSeconds = result.timeToFirstByte
                    trial.probeBytes = result.bodyBytes
                    trial.throughputBytesPerSecond = result.throughput
                } catch {
                    trial.succeeded = false
                    trial.failure = .init(stage: "probe", progress: 100, tag: "done", reason: "the probe fetch failed: \(error)")
                }
            }
        case .failed(let reason):
            trial.failure = Self.failure(events: events, reason: reason)
        case .timedOut:
            trial.failure = Self.failure(events: events, reason: "no 100% within \(item.route.timeout.seconds.formatted()) s")
        }
        if !trial.succeeded, state.withLock({ $0.interrupted }) {
            trial.failure = Self.failure(events: events, reason: "interrupted")
        }
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
        return trial
    }

    /// Milestones, first byte and time to 100 % as the child itself recorded them.
    static func fill(_ trial: inout ABResult.Trial, from events: [RunEvent]) {
        trial.milestones = events.filter { $0.event == "bootstrap" }.map {
            ABResult.Milestone(progress: $0.progress ?? 0, tag: $0.tag ?? "", seconds: $0.t)
        }
        trial.firstByteSeconds = events.first { $0.event == "first-byte" }?.t
        trial.bootstrapSeconds = events.first { $0.event == "ready" }?.t
    }

    /// Where the trial stalled and why: the last milestone and tor's last warning, if any.
    static func failure(events: [RunEvent], reason: String) -> ABResult.Failure {
        let last = events.last { $0.event == "bootstrap" }
        var why = reason
        if let warning = events.last(where: { $0.event == "warning" || $0.event == "stalled" })?.warning {
            why += "; last problem: \(warning)"
        } else if let transport = events.last(where: { $0.event == "transport" && $0.kind == "dial-failed" })?.message {
            why += "; transport: \(transport)"
        }
        return ABResult.Failure(stage: "bootstrap", progress: last?.progress, tag: last?.tag, reason: why)
    }
}
