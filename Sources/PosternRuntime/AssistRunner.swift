import Foundation
import Synchronization
import PosternCore

/// A session with the transport `auto`: runs PosternCore's `ConnectionAssistant` against the
/// session's tor, remembers what worked and hands its decisions to the session's events. Every route is applied with SETCONF on the
/// running tor (tor starts with DisableNetwork 1, so nothing is dialled before the first route).
final class AssistRunner: Sendable {
    /// Keys a route sets or resets on the live tor.
    public static let managedKeys = RoutePlan.managedKeys + ["DisableNetwork"]

    private struct Running {
        var assistant: ConnectionAssistant<ContinuousClock>
        var driver: Task<Void, Never>
        var listener: Task<Void, Never>
    }

    private let manager: TorManager
    private let settings: SettingsSource
    private let running = Mutex<Running?>(nil)
    private let strategy: AssistStrategy
    private let probes: AssistProbes?
    private let memory: Mutex<AssistMemory>
    private let network: String
    private let started = ContinuousClock.now
    /// Called with each snapshot (for the status file and stream).
    private let onSnapshot: @Sendable (AssistSnapshot) -> Void
    private let emit: @Sendable (SessionEvent) -> Void

    private let eventLog: RunEventLog?

    init(manager: TorManager, settings: SettingsSource, strategy: AssistStrategy = .race, probes: AssistProbes?,
         eventLog: RunEventLog?, emit: @escaping @Sendable (SessionEvent) -> Void,
         onSnapshot: @escaping @Sendable (AssistSnapshot) -> Void) {
        self.eventLog = eventLog
        self.manager = manager
        self.settings = settings
        self.emit = emit
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
        emit(.assistStarted(order: plan.routes.map(\.label), probing: strategy == .race,
                            lastGoodFirst: plan.lastGoodFirst ? plan.routes.first?.label : nil, notes: plan.notes))
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
        let switched = after.route != before.route || after.attempts.count != before.attempts.count
        emit(.settingsApplied(.assistRoutesReplaced(nowTrying: switched ? after.route : nil, order: after.order, notes: plan.notes)))
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
                    emit(.warning(SessionWarning(.cannotRememberRoute, "cannot remember the route that worked: \(error)")))
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
                emit(.warning(SessionWarning(.cannotUpdateAssistMemory, "cannot update the connection assist memory: \(error)")))
            }
        }
        for event in update.events { emit(.assist(event)) }
    }
}
