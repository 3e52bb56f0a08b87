import Foundation
import PosternLinkSpec
import PosternTor
import Synchronization
import TransportBase

/// Connection assist as a session runs it: a `ConnectionAssistant` against the session's tor,
/// a memory of what worked (in the state directory), and each decision handed to the session as
/// an `AssistNotice`. Every route is applied with SETCONF on the running tor (tor starts with
/// DisableNetwork 1, so nothing is dialled before the first route). Drives tor only through
/// `TorControlling`, so it runs without a tor in tests.
package final class AssistRunner: Sendable {
    /// The option that switches tor's network off and on.
    package static let networkSwitch = "DisableNetwork"

    /// The option that keeps tor off the network until assist applies the first route.
    package static var networkOff: TorOption { try! TorOption(networkSwitch, "1") }

    private struct Running {
        var assistant: ConnectionAssistant<ContinuousClock>
        var driver: Task<Void, Never>
        var listener: Task<Void, Never>
    }

    /// The tor options of one route.
    package typealias RouteOptions = @Sendable (AssistRoute) throws -> [TorOption]

    private let tor: any TorControlling
    private let stateDirectory: URL
    private let routeOptions: RouteOptions
    /// Keys a route sets or resets on the live tor (the network switch among them).
    private let managedKeys: [String]
    private let running = Mutex<Running?>(nil)
    private let strategy: AssistStrategy
    private let probes: AssistProbes?
    private let memory: Mutex<AssistMemory>
    private let network: String
    private let started = ContinuousClock.now
    /// Called with each snapshot (for the status file and stream).
    private let onSnapshot: @Sendable (AssistSnapshot) -> Void
    private let notify: @Sendable (AssistNotice) -> Void
    /// The session's connections (``FlowLedger``): what ``CensorReader`` reads; nil: none.
    private let flows: FlowLedger?
    /// Transports whose dials for tor report to `flows` (the session's in-process ones).
    private let inProcess: Set<TransportName>

    /// - Parameters:
    ///   - routeKeys: the option keys a route may set; each route resets them (and the network
    ///     switch) before setting its own.
    ///   - routeOptions: a route's tor options (bridges, transport plugins).
    package init(tor: any TorControlling, stateDirectory: URL, strategy: AssistStrategy = .race, probes: AssistProbes?,
                 flows: FlowLedger? = nil, inProcess: Set<TransportName> = [], routeKeys: [String], routeOptions: @escaping RouteOptions,
                 notify: @escaping @Sendable (AssistNotice) -> Void,
                 onSnapshot: @escaping @Sendable (AssistSnapshot) -> Void) {
        self.tor = tor
        self.stateDirectory = stateDirectory
        self.routeOptions = routeOptions
        managedKeys = routeKeys + [Self.networkSwitch]
        self.notify = notify
        self.strategy = strategy
        self.probes = probes
        self.flows = flows
        self.inProcess = inProcess
        self.onSnapshot = onSnapshot
        let memory = AssistMemory.read(in: stateDirectory)
        self.memory = Mutex(memory)
        network = memory.networkKey(gatewayHardwareAddress: AssistMemory.defaultGatewayHardwareAddress())
    }

    /// A transport's failed dial (typed): a failure signal for the route using that transport.
    package func transportDialFailed(transport: String, code: String, kind: String, error: TransportError? = nil) {
        guard let assistant = running.withLock({ $0?.assistant }) else { return }
        let signal = ConnectionSignal(source: .transportDial, problem: ConnectionProblem(transportCode: code, kind: kind), peer: nil)
        Task {
            // The typed error first: a definitive one (an untrusted certificate) ends the route at once.
            if let error { await assistant.recordDialError(error, transport: transport) }
            await assistant.report(signal, transport: transport)
        }
    }

    package func start(_ plan: AssistRoutePlan) async {
        notify(.started(order: plan.routes.map(\.name), probing: strategy == .race,
                        lastGoodFirst: plan.lastGoodFirst ? plan.routes.first?.name : nil, notes: plan.notes))
        let tor = tor
        let routeOptions = routeOptions
        let managedKeys = managedKeys
        var probe: ConnectionAssistant<ContinuousClock>.RouteProbe?
        if let probes {
            probe = { @Sendable route in await probes.probe(route) }
        }
        // Confirm connects report to the ledger as such (never printed: the address is a bridge's).
        let confirm: ConnectionAssistant<ContinuousClock>.Confirm? = flows.map { flows in
            let connect = ConfirmConnect(dialer: OutboundDialer.direct.reporting(to: flows, as: .confirm))
            return { @Sendable endpoint in await connect(endpoint) }
        }
        let assistant = ConnectionAssistant(routes: plan.routes, tor: tor, clock: ContinuousClock(), strategy: strategy,
                                            probe: probe, flows: flows, inProcess: inProcess, confirm: confirm, remembered: plan.remembered) { route in
            try await tor.reconfigure(try routeOptions(route) + [try TorOption(Self.networkSwitch, "0")], resetting: managedKeys)
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
    package func replace(_ plan: AssistRoutePlan) async {
        guard let assistant = running.withLock({ $0?.assistant }) else { return await start(plan) }
        let before = await assistant.snapshot
        await assistant.replaceRoutes(plan.routes)
        let after = await assistant.snapshot
        let switched = after.route != before.route || after.attempts.count != before.attempts.count
        notify(.routesReplaced(nowTrying: switched ? after.route : nil, order: after.order, notes: plan.notes))
    }

    package func stop() async {
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
            switch event {
            case .connected(let route, _):
                do {
                    try AssistFiles.writeLastGoodRoute(route.key, in: stateDirectory)
                } catch {
                    notify(.cannotRememberRoute(message: "cannot remember the route that worked: \(error)"))
                }
                let seconds = (ContinuousClock.now - started).seconds
                memory.withLock { $0.recordSuccess(route.key, network: network, secondsToReady: seconds) }
                memoryChanged = true
            case .diagnosed(let route, let diagnosis) where diagnosis.rulesOutRoute:
                // Kept for the next runs on this network (AssistMemory, RememberedDiagnosis).
                memory.withLock { $0.recordDiagnosis(diagnosis, routeKey: route.key, network: network) }
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
                try memory.withLock { $0 }.write(in: stateDirectory)
            } catch {
                notify(.cannotUpdateMemory(message: "cannot update the connection assist memory: \(error)"))
            }
        }
        for event in update.events { notify(.event(event)) }
    }
}
