import Foundation
import Synchronization
import PosternCore

/// `postern run` with `--transport auto`: runs PosternCore's `ConnectionAssistant` against the
/// run's tor and turns its decisions into output lines. Every route is applied with SETCONF on the
/// running tor (tor starts with DisableNetwork 1, so nothing is dialled before the first route).
final class AssistRunner: Sendable {
    /// Keys a route sets or resets on the live tor.
    static let managedKeys = RoutePlan.managedKeys + ["DisableNetwork"]

    private struct Running {
        var assistant: ConnectionAssistant<ContinuousClock>
        var driver: Task<Void, Never>
        var listener: Task<Void, Never>
    }

    private let manager: TorManager
    private let settings: SettingsSource
    private let output: Output
    private let json: Bool
    private let running = Mutex<Running?>(nil)
    private let strategy: AssistStrategy
    private let probes: AssistProbes?
    private let memory: Mutex<AssistMemory>
    private let network: String
    private let started = ContinuousClock.now
    /// Called with each snapshot (for the status file) and whether it is a line-worthy change.
    private let onSnapshot: @Sendable (AssistSnapshot) -> Void

    private let eventLog: RunEventLog?

    init(manager: TorManager, settings: SettingsSource, output: Output, json: Bool, strategy: AssistStrategy = .race,
         probes: AssistProbes?, eventLog: RunEventLog?, onSnapshot: @escaping @Sendable (AssistSnapshot) -> Void) {
        self.eventLog = eventLog
        self.manager = manager
        self.settings = settings
        self.output = output
        self.json = json
        self.strategy = strategy
        self.probes = probes
        self.onSnapshot = onSnapshot
        let memory = AssistMemory.read(in: settings.stateDirectory)
        self.memory = Mutex(memory)
        network = memory.networkKey(gatewayHardwareAddress: AssistMemory.defaultGatewayHardwareAddress())
    }

    /// A transport's failed dial (typed): a failure signal for the route using that transport.
    func transportDialFailed(transport: String, code: String, kind: String) {
        guard let assistant = running.withLock({ $0?.assistant }) else { return }
        let signal = ConnectionSignal(source: .transportDial, problem: ConnectionProblem(transportCode: code, kind: kind), peer: nil)
        Task { await assistant.report(signal, transport: transport) }
    }

    /// The option that keeps tor off the network until assist applies the first route.
    static var networkOff: TorOption { try! TorOption("DisableNetwork", "1") }

    func start(_ plan: AssistRoutePlan) async {
        if !json {
            var order = "connection assist: trying \(plan.routes.map(\.label).joined(separator: ", ")) in this order"
            if strategy == .race { order += ", probing them all meanwhile" }
            output.print(order)
            if plan.lastGoodFirst, let first = plan.routes.first {
                output.print("connection assist: \(first.label) goes first: it connected last time")
            }
            for note in plan.notes { output.print("note: \(note)") }
        }
        let settings = settings
        let manager = manager
        var probe: ConnectionAssistant<ContinuousClock>.RouteProbe?
        if let probes {
            probe = { @Sendable route in await probes.probe(route) }
        }
        let assistant = ConnectionAssistant(routes: plan.routes, manager: manager, clock: ContinuousClock(), strategy: strategy,
                                            probe: probe) { route in
            let routePlan = try settings.plan(for: route)
            try await manager.reconfigure(routePlan.options + [try TorOption("DisableNetwork", "0")],
                                          resetting: Self.managedKeys)
        }
        let updates = await assistant.updates()
        let listener = Task { [self] in
            for await update in updates {
                report(update)
            }
        }
        let driver = Task { await assistant.run() }
        running.withLock { $0 = Running(assistant: assistant, driver: driver, listener: listener) }
    }

    /// New routes from changed settings; says what assist does now.
    func replace(_ plan: AssistRoutePlan) async {
        guard let assistant = running.withLock({ $0?.assistant }) else { return await start(plan) }
        let before = await assistant.snapshot
        await assistant.replaceRoutes(plan.routes)
        let after = await assistant.snapshot
        guard !json else { return }
        output.endStatus()
        if after.route != before.route || after.attempts.count != before.attempts.count, let route = after.route {
            output.print("settings changed: now \(route) (connection assist); applied to the running tor without a restart")
        } else {
            output.print("settings changed: connection assist now tries \(after.order.joined(separator: ", "))")
        }
        for note in plan.notes { output.print("note: \(note)") }
    }

    func stop() async {
        guard let current = running.withLock({ state -> Running? in defer { state = nil }; return state }) else { return }
        current.driver.cancel()
        await current.driver.value
        current.listener.cancel()
        await current.listener.value
    }

    private func report(_ update: ConnectionAssistant<ContinuousClock>.Update) {
        onSnapshot(update.snapshot)
        var memoryChanged = false
        for event in update.events {
            eventLog?.assist(event)
            switch event {
            case .connected(let route, _):
                do {
                    try AssistFiles.writeLastGoodRoute(route.key, in: settings.stateDirectory)
                } catch {
                    output.error("postern run: cannot remember the route that worked: \(error)")
                }
                let seconds = (ContinuousClock.now - started).seconds
                memory.withLock { $0.recordSuccess(route.key, network: network, secondsToReady: seconds) }
                memoryChanged = true
            case .movedOn(let failure) where failure.reason != .settingsChanged && failure.reason != .unavailable:
                memory.withLock { $0.recordFailure(failure.route.key, network: network) }
                memoryChanged = true
            default:
                break
            }
        }
        if memoryChanged {
            do {
                try memory.withLock { $0 }.write(in: settings.stateDirectory)
            } catch {
                output.error("postern run: cannot update the connection assist memory: \(error)")
            }
        }
        guard !json else { return }
        for event in update.events {
            output.endStatus()
            switch event {
            case .trying(let route, let position, let count, let cycle):
                var line = "trying \(route.label) (route \(position) of \(count)"
                if cycle > 1 { line += ", pass \(cycle)" }
                line += "): up to \(route.limits.ceiling.seconds.formatted()) s, moving on after"
                line += " \(route.limits.noProgressWindow.seconds.formatted()) s without progress"
                if strategy == .race { line += ", sooner on failing connections or a failed probe" }
                output.print(line)
            case .chose(let choice):
                if choice.reason == .probePassed { output.print("connection assist: choosing \(choice.route.label): \(choice)") }
            case .probed(let route, let result):
                output.print("probe \(route.label): \(result.summary)")
            case .movedOn(let failure):
                if failure.skipped {
                    output.print("passing over \(failure.route.label): \(failure)")
                } else {
                    output.print("moving on from \(failure.route.label): \(failure)")
                }
            case .allFailed(let failures, let retryIn):
                let reasons = failures.map { "\($0.route.label): \($0)" }.joined(separator: "; ")
                var line = "stalled: every route failed (\(reasons)); trying them all again in \(retryIn.seconds.formatted()) s"
                if let last = failures.last { line += " (tor keeps trying \(last.route.label) meanwhile)" }
                output.print(line)
            case .connected(let route, let after):
                output.print("connection assist: connected via \(route.label) after \(String(format: "%.1f", after.seconds)) s; it goes first next time")
            }
        }
    }
}
