import BridgeConfig
import Foundation
import ConnectionAssist
import PosternTor
import Synchronization
import TransportBase

/// Postern as an app embeds it: one tor with the settings' bridges and transports, connection
/// assist with the transport `auto`, and live changes: settings changed meanwhile (the store
/// file replaced, ``InMemorySettings/update(_:)``, ``reloadSettings()``) reach the running tor by
/// SETCONF, without a restart.
///
///     let session = try PosternSession(settings: .inMemory(settings, stateDirectory: state),
///                                      transports: try Transports.registry(), options: options)
///     try await session.start()
///     guard await session.awaitReady(timeout: .seconds(120)) else { ... }
///     // connect through session.socks (socks5h), then
///     await session.stop()
///
/// The session owns the external plugin processes of its transports: ``stop()`` stops those and
/// no other. tor_api allows one tor per process: one running session per process.
public final class PosternSession: Sendable {
    /// The SOCKS5 listener as configured (``SessionStatus/socks`` has the bound one).
    public let socks: SocksEndpoint
    /// How the session's tor runs.
    public let options: SessionOptions
    /// The embedded tor: the session's alone (an app asks the session, never restarts tor under it).
    let tor = TorManager()
    /// The session's transports, whose plugin processes it stops.
    private let transports: TransportRegistry

    private let source: SettingsSource
    /// What the session follows.
    public var settings: SessionSettings { source.settings }
    private let transportHost: TransportHost
    private let eventLog: RunEventLog?
    private let assist: AssistRunner

    fileprivate struct State {
        var route = RouteName("")
        var assist: AssistSnapshot?
        var phases: [RunStatusRecord.PhaseTiming] = []
        /// Set when the session ends: late updates no longer rewrite the (removed) status file.
        var closed = false
        var started = false
        var mode: SessionMode?
        var subscribers: [UUID: AsyncStream<SessionEvent>.Continuation] = [:]
        var tasks: [Task<Void, Never>] = []
        var watcher: Task<Void, Never>?
        var reloadRequested = false
    }
    private let shared: Shared

    /// What the session's tasks and callbacks share (a class: a Mutex cannot be captured).
    private final class Shared: Sendable {
        let state = Mutex(State())
        let socks: SocksEndpoint
        let statusFile: URL?
        let startedAt = ContinuousClock.now
        /// Definitive failures of a fixed route (their message), for ``waitForFailure()``.
        let definitiveFailures: AsyncStream<String>
        private let definitiveFailure: AsyncStream<String>.Continuation
        private let definitiveSeen = Mutex(false)
        init(socks: SocksEndpoint, statusFile: URL?) {
            self.socks = socks
            self.statusFile = statusFile
            (definitiveFailures, definitiveFailure) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(1))
        }

        /// A fixed route cannot work (said once): warns and ends ``waitForFailure()``.
        /// True the first time.
        func failDefinitively(_ message: String) -> Bool {
            guard definitiveSeen.withLock({ seen in defer { seen = true }; return !seen }) else { return false }
            emit(.warning(SessionWarning(.routeCannotWork, message)))
            definitiveFailure.yield(message)
            return true
        }

        func endDefinitiveFailures() { definitiveFailure.finish() }

        func emit(_ event: SessionEvent) {
            state.withLock { for continuation in $0.subscribers.values { continuation.yield(event) } }
        }

        /// Writes the status file (under the lock, so that no write follows its removal at the end).
        func publish(_ tor: TorStatus, writing: Bool = true) -> SessionStatus {
            state.withLock {
                // The bound listener once tor has one (with port auto, the port it chose).
                let status = SessionStatus(tor: tor, route: $0.route, assist: $0.assist, phases: $0.phases, socks: tor.socks ?? socks,
                                           seconds: (ContinuousClock.now - startedAt).seconds)
                if writing, !$0.closed, let statusFile { try? status.record.write(to: statusFile) }
                return status
            }
        }
    }

    /// Prepares a session; ``start()`` runs it. Subscribe to ``events()`` before starting to see
    /// everything.
    public init(settings: SessionSettings, transports registry: TransportRegistry, options: SessionOptions) throws(SessionError) {
        self.options = options
        socks = options.socks
        transports = registry
        let shared = Shared(socks: options.socks, statusFile: options.statusFile)
        self.shared = shared
        let eventLog = try options.eventsFile.map { file throws(SessionError) in try RunEventLog(file: file) }
        self.eventLog = eventLog
        // Dial failures go to connection assist once it exists; the sink is made first.
        let assistBox = Mutex<AssistRunner?>(nil)
        let emitBox = Mutex<(@Sendable (SessionEvent) -> Void)?>(nil)
        // Every connection the in-process transports open for tor, and assist's probes and
        // confirm connects: what connection assist reads the censor from (bridge addresses are
        // compared there, never printed).
        let flows = FlowLedger()
        let host = TransportHost(registry: registry, events: TransportEventSink { event in
            eventLog?.transport(event)
            if event.kind == .dialFailed, let assist = assistBox.withLock({ $0 }) {
                assist.transportDialFailed(transport: event.transport.rawValue, code: event.error?.code.rawValue ?? "",
                                           kind: event.error?.kind.rawValue ?? "", error: event.error)
            }
            // On a fixed route nothing else will be tried: a certificate that was not trusted will
            // not become trusted by waiting, so the run ends now with the reason (an A/B trial's
            // child run among them) instead of letting tor retry for its whole window.
            if event.kind == .dialFailed, let error = event.error, CensorReader.isUntrustedCertificate(error),
               shared.state.withLock({ $0.mode?.fixedPlan != nil }) {
                let message = "the \(event.transport) bridge's certificate was not trusted (a censor in the middle, or a wrong pin): "
                    + "this route cannot work here; stopping"
                if shared.failDefinitively(message) { eventLog?.failed(code: SessionWarning.Code.routeCannotWork.rawValue, message: message) }
            }
            // A dial cut short because its listener was stopped (connection assist moving on) is
            // not a problem worth reporting.
            let cutShort = event.kind == .dialFailed && event.message.hasSuffix("the operation was cancelled")
            if (event.severity == .error || event.severity == .warning) && !cutShort {
                emitBox.withLock { $0 }?(.transportProblem(event))
            }
        }, flows: flows)
        transportHost = host
        source = SettingsSource(settings: settings, transports: host)
        var probes = options.assistStrategy == .race ? try? AssistProbes(torOptions: options.torOptions) : nil
        if let dialer = probes?.dialer { probes?.dialer = dialer.reporting(to: flows, as: .probe) }
        let tor = tor
        let emit: @Sendable (SessionEvent) -> Void = { event in shared.emit(event) }
        emitBox.withLock { $0 = emit }
        let settingsSource = source
        assist = AssistRunner(tor: tor, stateDirectory: source.stateDirectory, strategy: options.assistStrategy, probes: probes, flows: flows,
                              inProcess: Set(registry.names),
                              routeKeys: RoutePlan.managedKeys, routeOptions: { route in try settingsSource.plan(for: route).options },
                              notify: { notice in Self.relay(notice, eventLog: eventLog, emit: emit) }) { snapshot in
            shared.state.withLock {
                $0.assist = snapshot
                if let route = snapshot.route { $0.route = route }
            }
            Task {
                let status = shared.publish(await tor.currentStatus)
                shared.emit(.status(status, cause: .assist))
            }
        }
        assistBox.withLock { $0 = assist }
    }

    /// Starts a prepared session in one call.
    public static func start(settings: SessionSettings, transports: TransportRegistry,
                             options: SessionOptions) async throws(SessionError) -> PosternSession {
        let session = try PosternSession(settings: settings, transports: transports, options: options)
        try await session.start()
        return session
    }

    /// Everything that happens from now on, in order; ends when the session stops.
    public func events() -> AsyncStream<SessionEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: SessionEvent.self)
        let id = UUID()
        let closed = shared.state.withLock { state -> Bool in
            if state.closed { return true }
            state.subscribers[id] = continuation
            return false
        }
        if closed { continuation.finish() }
        continuation.onTermination = { [shared] _ in _ = shared.state.withLock { $0.subscribers.removeValue(forKey: id) } }
        return stream
    }

    /// The status, starting with the current one; slow consumers see only the latest.
    public func statusUpdates() -> AsyncStream<SessionStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: SessionStatus.self, bufferingPolicy: .bufferingNewest(1))
        let events = events()
        let task = Task { [self] in
            continuation.yield(await currentStatus)
            for await event in events {
                if case .status(let status, _) = event { continuation.yield(status) }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// The status now.
    public var currentStatus: SessionStatus {
        get async {
            let tor = await tor.currentStatus
            return shared.publish(tor, writing: false)
        }
    }

    /// Waits until tor is ready (bootstrapped, SOCKS listening), up to `timeout`. False on
    /// timeout or when tor failed.
    public func awaitReady(timeout: Duration = .seconds(120)) async -> Bool {
        await tor.awaitReady(timeout: timeout)
    }

    /// tor's answers to GETINFO `keys` (tor's control-spec keys, e.g. "version",
    /// "net/listeners/socks"), for an app that needs more than ``currentStatus``. Throws while tor
    /// is not running.
    public func torInfo(_ keys: [String]) async throws -> [String: String] { try await tor.getInfo(keys) }

    /// Checks the settings now rather than at the next interval (what SIGHUP does to `postern run`).
    public func reloadSettings() { shared.state.withLock { $0.reloadRequested = true } }

    /// Waits until tor fails on its own (true), or the session stops (false).
    public func waitForFailure() async -> Bool {
        let tor = tor
        let definitive = shared.definitiveFailures
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await status in await tor.statusUpdates() where status.state == .failed { return true }
                return false
            }
            // A fixed route that cannot work (``SessionWarning/Code/routeCannotWork``).
            group.addTask {
                for await _ in definitive { return true }
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Serves a started session until `stop` returns (false) or tor fails on its own (true), the
    /// way a daemon runs it: `reloadRequested` is asked every 250 ms (a SIGHUP arrived, say) and a
    /// true checks the settings at once. Does not stop the session: the caller does, after saying so.
    public func serve(until stop: @escaping @Sendable () async -> Void, reloadRequested: @escaping @Sendable () -> Bool) async -> Bool {
        let reloads = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                if reloadRequested() { reloadSettings() }
            }
        }
        defer { reloads.cancel() }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask { await stop(); return false }
            group.addTask { await self.waitForFailure() }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Starts tor on the settings' route: a fixed one, or connection assist with `auto`.
    public func start() async throws(SessionError) {
        guard shared.state.withLock({ state -> Bool in
            defer { state.started = true }
            return !state.started && !state.closed
        }) else { throw SessionError(.stopped, kind: .usage, "a session starts once") }
        let mode: SessionMode
        var configuration: TorConfiguration
        do {
            mode = try source.mode()
            var torOptions = options.torOptions
            torOptions += mode.fixedPlan?.options ?? []
            configuration = TorConfiguration(dataDirectory: options.dataDirectory, socks: socks,
                                             bootstrapDeadline: options.stallTimeout, options: torOptions)
        } catch let error as SessionError {
            close()
            throw error
        } catch {
            close()
            throw SessionError(.invalidBridges, "\(error)")
        }
        configuration.noticeLevelLog = options.noticeLevelLog
        if case .assist = mode {
            // Connection assist owns stall reporting (per route); tor starts off the network and
            // the first route switches it on.
            configuration.bootstrapDeadline = .seconds(30 * 86_400)
            configuration.options.append(AssistRunner.networkOff)
        }
        shared.state.withLock {
            $0.mode = mode
            $0.route = mode.fixedPlan?.route ?? .connectionAssist
        }
        if case .fixed(let plan) = mode { emit(.fixedRoute(route: plan.route, notes: plan.notes)) }
        eventLog?.started(route: mode.fixedPlan?.route ?? "auto")

        let tor = tor
        let eventLog = eventLog
        let everyStatus = eventLog == nil ? nil : await tor.statusUpdates(everyChange: true)
        let recorder = Task {
            guard let eventLog, let everyStatus else { return }
            for await status in everyStatus { eventLog.observe(status) }
        }
        let updates = await tor.statusUpdates()
        let reporter = Task { [shared] in
            for await status in updates {
                let seconds = (ContinuousClock.now - shared.startedAt).seconds
                shared.state.withLock { values in
                    if !status.bootstrapTag.isEmpty, status.bootstrapProgress > (values.phases.last?.progress ?? -1) {
                        values.phases.append(.init(progress: status.bootstrapProgress, tag: status.bootstrapTag,
                                                   summary: status.bootstrapSummary, seconds: seconds))
                    }
                }
                shared.emit(.status(shared.publish(status), cause: .tor))
            }
        }
        shared.state.withLock { $0.tasks += [recorder, reporter] }

        do {
            try await tor.start(configuration)
        } catch {
            reporter.cancel()
            recorder.cancel()
            eventLog?.observe(await tor.currentStatus)
            eventLog?.stopped()
            close()
            throw SessionError(.torDidNotStart, "tor did not start: \(error)")
        }
        if case .assist(let plan) = mode { await assist.start(plan) }
        let watcher = Task { [self] in await watchSettings() }
        shared.state.withLock { $0.watcher = watcher }
    }

    /// Stops connection assist, tor and the transports; removes the status file; ends the events.
    public func stop() async {
        let (tasks, watcher) = shared.state.withLock { state -> ([Task<Void, Never>], Task<Void, Never>?) in
            defer { state.tasks = []; state.watcher = nil }
            return (state.tasks, state.watcher)
        }
        // First the watcher, which may be applying a change; it finishes that change.
        if let watcher {
            watcher.cancel()
            _ = await watcher.value
        }
        await assist.stop()
        await tor.shutdown()
        await transportHost.stopAll()
        await transports.stopPlugins()
        for task in tasks { task.cancel() }
        eventLog?.stopped()
        close()
    }

    private func close() {
        let subscribers = shared.state.withLock { state -> [AsyncStream<SessionEvent>.Continuation] in
            state.closed = true
            if let file = options.statusFile { try? FileManager.default.removeItem(at: file) }
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        for continuation in subscribers { continuation.finish() }
        shared.endDefinitiveFailures()
    }

    private func emit(_ event: SessionEvent) { shared.emit(event) }

    /// Connection assist's notices as the session's events (and lines of the events file).
    private static func relay(_ notice: AssistNotice, eventLog: RunEventLog?, emit: @Sendable (SessionEvent) -> Void) {
        switch notice {
        case .started(let order, let probing, let lastGoodFirst, let notes):
            emit(.assistStarted(order: order, probing: probing, lastGoodFirst: lastGoodFirst, notes: notes))
        case .routesReplaced(let nowTrying, let order, let notes):
            emit(.settingsApplied(.assistRoutesReplaced(nowTrying: nowTrying, order: order, notes: notes)))
        case .event(let event):
            eventLog?.assist(event)
            emit(.assist(event))
        case .cannotRememberRoute(let message):
            emit(.warning(SessionWarning(.cannotRememberRoute, message)))
        case .cannotUpdateMemory(let message):
            emit(.warning(SessionWarning(.cannotUpdateAssistMemory, message)))
        }
    }

    /// Settings changed meanwhile reach the running tor by SETCONF.
    private func watchSettings() async {
        var lastStamp = source.stamp()
        while !Task.isCancelled {
            try? await Task.sleep(for: options.settingsCheckInterval)
            guard !Task.isCancelled else { return }
            let requested = shared.state.withLock { state -> Bool in
                defer { state.reloadRequested = false }
                return state.reloadRequested
            }
            let stamp = source.stamp()
            guard requested || stamp != lastStamp else { continue }
            lastStamp = stamp
            guard let mode = shared.state.withLock({ $0.mode }) else { continue }
            do {
                let newMode = try source.mode()
                guard newMode != mode else { continue }
                switch (mode, newMode) {
                case (.assist, .assist(let plan)):
                    await assist.replace(plan)
                case (.fixed, .assist(let plan)):
                    emit(.settingsApplied(.nowConnectionAssist))
                    await assist.start(plan)
                case (_, .fixed(let newPlan)):
                    if case .assist = mode { await assist.stop() }
                    try await tor.reconfigure(newPlan.options, resetting: RoutePlan.liveKeys)
                    shared.state.withLock {
                        $0.route = newPlan.route
                        $0.assist = nil
                    }
                    emit(.settingsApplied(.nowFixed(route: newPlan.route, notes: newPlan.notes)))
                }
                shared.state.withLock { $0.mode = newMode }
            } catch {
                emit(.warning(SessionWarning(.settingsNotApplied, "settings not applied: \(error)")))
            }
        }
    }
}

extension PosternSession: TorReadinessSource {
    /// True when tor is ready now (bootstrapped, SOCKS listening).
    public func torIsReady() async -> Bool { await tor.currentStatus.isReady }
    /// Waits up to `timeout` for tor to be ready (``awaitReady(timeout:)``).
    public func waitUntilTorReady(timeout: Duration) async -> Bool { await awaitReady(timeout: timeout) }
}
