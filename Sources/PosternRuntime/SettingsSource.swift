import BridgeConfig
import Foundation
import ConnectionAssist
import PosternTor
import PosternLinkSpec
import Synchronization

/// Settings kept by the embedding app instead of a settings directory. ``update(_:)`` changes
/// them; a running session applies the change to its tor without a restart (as it does when the
/// store file of a settings directory is replaced).
public final class InMemorySettings: Sendable {
    private let state: Mutex<(configuration: BridgeConfiguration, generation: Int)>

    /// Settings starting as `configuration` (default: no bridges, transport auto, Tor on).
    public init(_ configuration: BridgeConfiguration = BridgeConfiguration()) {
        state = Mutex((configuration, 0))
    }

    /// The settings now.
    public var configuration: BridgeConfiguration { state.withLock { $0.configuration } }

    /// Changes the settings at once, or not at all when `change` throws.
    public func update<E: Error>(_ change: (inout BridgeConfiguration) throws(E) -> Void) throws(E) {
        try state.withLock { (value) throws(E) in
            var configuration = value.configuration
            try change(&configuration)
            value = (configuration, value.generation + 1)
        }
    }

    var generation: Int { state.withLock { $0.generation } }
}

/// What a session follows: bridges, the transport choice and the Tor preference (a settings
/// directory's store or ``InMemorySettings``), this session's overrides, the built-in bridges and
/// connection assist's limits and memory.
public struct SessionSettings: Sendable {
    /// Where the bridges, the transport choice and the Tor preference are kept.
    public enum Store: Sendable {
        /// The store of a settings directory (`postern bridges`, `postern transport` write it).
        case directory(BridgeStore)
        /// Settings the app keeps in memory (``InMemorySettings``).
        case memory(InMemorySettings)
    }

    /// Where the settings are kept.
    public var store: Store
    /// Where connection assist remembers the last good route and its per-network memory.
    public var stateDirectory: URL
    /// Bridges for this session only, replacing the stored selection (`--bridge`).
    public var overrideBridges: [BridgeLine] = []
    /// The route for this session only (`--transport`).
    public var overrideTransport: TransportSelection?
    /// The built-in bridges. nil: none (a private network must never dial Tor Browser's).
    public var builtins: BuiltinBridges? = try? BuiltinBridges.bundled(rules: Transports.argumentRules)
    /// Connection assist's ceilings and no-progress windows.
    public var limits = RouteLimitTable()

    /// Settings from `store`, state in `stateDirectory`; the bundled built-in bridges and default limits.
    public init(store: Store, stateDirectory: URL) {
        self.store = store
        self.stateDirectory = stateDirectory
    }

    /// The settings of a settings directory laid out as `postern` keeps it: the store and
    /// connection assist's limits in `configDirectory`, state in `stateDirectory` (default
    /// `<configDirectory>/state`).
    public static func directory(_ configDirectory: URL, stateDirectory: URL? = nil) throws(SessionError) -> SessionSettings {
        let store: BridgeStore
        do { store = try BridgeStore(directory: configDirectory.path, rules: Transports.argumentRules) } catch { throw SessionError(.store, error.message) }
        return try directory(store: store, configDirectory: configDirectory,
                             stateDirectory: stateDirectory ?? configDirectory.appendingPathComponent("state"))
    }

    /// The settings of an open `store`, with connection assist's limits read from `configDirectory`
    /// and state in `stateDirectory`. Throws when the limits file cannot be read.
    public static func directory(store: BridgeStore, configDirectory: URL, stateDirectory: URL) throws(SessionError) -> SessionSettings {
        var settings = SessionSettings(store: .directory(store), stateDirectory: stateDirectory)
        do { settings.limits = try AssistFiles.readLimits(in: configDirectory) } catch { throw SessionError(.store, error.message) }
        return settings
    }

    /// Settings held in memory; the state directory keeps connection assist's memory.
    public static func inMemory(_ settings: InMemorySettings, stateDirectory: URL) -> SessionSettings {
        SessionSettings(store: .memory(settings), stateDirectory: stateDirectory)
    }

    /// The settings as they are now (a directory's store is read again).
    public func load() throws(SessionError) -> BridgeConfiguration {
        switch store {
        case .directory(let store):
            do { return try store.load() } catch { throw SessionError(.store, error.message) }
        case .memory(let settings):
            return settings.configuration
        }
    }

    /// Changes whenever the settings change (a store file's writes are atomic renames).
    func stamp() -> String {
        switch store {
        case .directory(let store):
            var info = stat()
            guard stat(store.filePath, &info) == 0 else { return "absent" }
            return "\(info.st_ino)-\(info.st_mtim.tv_sec)-\(info.st_mtim.tv_nsec)-\(info.st_size)"
        case .memory(let settings):
            return "memory-\(settings.generation)"
        }
    }
}

/// How a session reaches tor under its current settings.
enum SessionMode: Equatable {
    /// `auto`: connection assist tries these routes in order.
    case assist(AssistRoutePlan)
    /// direct or one transport.
    case fixed(RoutePlan)

    var fixedPlan: RoutePlan? { if case .fixed(let plan) = self { plan } else { nil } }
}

/// The settings plus the listeners of the transports a plan uses: turns settings into tor options.
struct SettingsSource: Sendable {
    let settings: SessionSettings
    /// Runs the in-process listeners of the transports the plan uses.
    let transports: TransportHost

    var stateDirectory: URL { settings.stateDirectory }

    private func loadEnabled() throws(SessionError) -> BridgeConfiguration {
        let configuration = try settings.load()
        guard configuration.torEnabled else {
            throw SessionError(.torTurnedOff, kind: .usage,
                               "Tor is turned off in the settings ('postern tor on' turns it back on); not starting")
        }
        return configuration
    }

    func plan() throws -> RoutePlan {
        let configuration = try loadEnabled()
        // First learn which transports the bridges need, then start (only) those listeners and
        // render their ports into the ClientTransportPlugin lines.
        let draft = try RoutePlan.make(configuration: configuration, overrideBridges: settings.overrideBridges,
                                       overrideTransport: settings.overrideTransport, pluginPorts: [:], builtins: settings.builtins)
        let ports: [String: UInt16]
        do {
            ports = try transports.ensure(draft.transports.map(\.rawValue))
        } catch {
            throw SessionError(.transport, error.message)
        }
        guard !ports.isEmpty else {
            transports.admit(draft.bridges)
            return draft
        }
        var named: [TransportName: UInt16] = [:]
        for (name, port) in ports {
            if let transport = TransportName(name) { named[transport] = port }
        }
        let plan = try RoutePlan.make(configuration: configuration, overrideBridges: settings.overrideBridges,
                                      overrideTransport: settings.overrideTransport, pluginPorts: named, builtins: settings.builtins)
        // Before tor gets the plan: its listeners accept exactly these bridges.
        transports.admit(plan.bridges)
        return plan
    }

    func mode() throws -> SessionMode {
        let configuration = try loadEnabled()
        guard (settings.overrideTransport ?? configuration.transport) == .auto else { return .fixed(try plan()) }
        var available = Set(transports.availableTransports.compactMap(TransportName.init))
        available.insert(.vanilla)
        let stateDirectory = settings.stateDirectory
        let lastGood = AssistFiles.readLastGoodRoute(in: stateDirectory)
        let memory = AssistMemory.read(in: stateDirectory)
        let network = memory.networkKey(gatewayHardwareAddress: AssistMemory.defaultGatewayHardwareAddress())
        if !settings.overrideBridges.isEmpty {
            // --bridge: exactly these bridges, by transport; no direct attempt, no built-ins.
            return .assist(AssistRoutePlan(yours: settings.overrideBridges, yoursOrigin: .commandLine, builtins: [:],
                                           available: available, limits: settings.limits, lastGood: lastGood, includeDirect: false,
                                           memory: memory, network: network))
        }
        var builtinLines: [TransportName: [BridgeLine]] = [:]
        if let builtins = settings.builtins {
            for transport in builtins.transports { builtinLines[transport] = builtins.lines(for: transport) }
        }
        return .assist(AssistRoutePlan(yours: configuration.enabledBridges().map(\.line),
                                       custom: configuration.bridges.map(\.line), builtins: builtinLines,
                                       available: available, limits: settings.limits, lastGood: lastGood, memory: memory, network: network))
    }

    /// The tor options for one connection assist route, starting the listener its transport needs
    /// (and stopping the others).
    func plan(for route: AssistRoute) throws -> RoutePlan {
        guard let transport = route.transport else {
            _ = try? transports.ensure([])
            transports.admit([])
            return RoutePlan(route: RouteName(route.label), options: [], transports: [], notes: [])
        }
        var ports: [TransportName: UInt16] = [:]
        if !transport.isVanilla {
            do {
                let started = try transports.ensure([transport.rawValue])
                ports[transport] = started[transport.rawValue]
            } catch {
                throw SessionError(.transport, error.message)
            }
        } else {
            _ = try? transports.ensure([])
        }
        let plan = try RoutePlan.bridges(route.bridges, label: route.label, pluginPorts: ports)
        transports.admit(plan.bridges)
        return plan
    }

    func stamp() -> String { settings.stamp() }
}

extension SessionSettings {
    /// Whether tor options point tor at a private network (its own directory authorities, or a
    /// testing network). Tor Browser's public built-in bridges cannot reach one, so a session there
    /// should get no built-in bridges unless it is given some (and tests must never dial them).
    public static func isPrivateNetwork(_ torOptions: [TorOption]) -> Bool {
        torOptions.contains { ["DirAuthority", "AlternateDirAuthority", "TestingTorNetwork"].contains($0.key) }
    }

    /// The built-in bridges for a session with these tor options: `given` when there are some;
    /// none on a private network (``isPrivateNetwork(_:)``); otherwise they stay the bundled ones.
    public mutating func chooseBuiltins(_ given: BuiltinBridges?, torOptions: [TorOption]) {
        if let given {
            builtins = given
        } else if Self.isPrivateNetwork(torOptions) {
            builtins = nil
        }
    }
}
