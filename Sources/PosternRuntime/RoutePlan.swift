import BridgeConfig
import Foundation
import ConnectionAssist
import PosternTor
import PosternLinkSpec

/// Which way to tor a run takes, rendered as tor options: direct, or bridges of one transport (or
/// every enabled bridge). Contains bridge lines: its `options` must never be printed.
public struct RoutePlan: Equatable, Sendable {
    /// For humans: "direct", "bridges (vanilla)", "bridges (obfs4, built-in)".
    public var route: RouteName
    /// The tor options of the route (bridge lines among them: never print them).
    public var options: [TorOption]
    /// Transports that need an in-process PT listener (everything but vanilla).
    public var transports: [TransportName]
    /// What the user should know about the route (built-ins used, a transport skipped), one line each.
    public var notes: [String]
    /// The bridges exactly as tor gets them (placeholder addresses included): the in-process PT
    /// listeners accept these and nothing else (TransportHost.admit).
    public var bridges: [BridgeLine] = []

    /// The option keys a plan may set, reset when a new plan replaces an old one on a live tor.
    public static let managedKeys = ["UseBridges", "Bridge", "ClientTransportPlugin"]

    /// The keys a route sets or resets on a live tor: a plan's, and connection assist's network switch.
    static var liveKeys: [String] { managedKeys + [AssistRunner.networkSwitch] }

    /// - Parameters:
    ///   - overrideBridges: `--bridge` lines for this run, which replace the stored selection.
    ///   - overrideTransport: `--transport` for this run, which replaces the stored selection.
    ///   - builtins: the built-in bridges (bundled, or a private network's own list).
    public static func make(configuration: BridgeConfiguration, overrideBridges: [BridgeLine],
                     overrideTransport: TransportSelection?, pluginPorts: [TransportName: UInt16],
                     builtins: BuiltinBridges? = try? BuiltinBridges.bundled(rules: Transports.argumentRules)) throws -> RoutePlan {
        var notes: [String] = []
        var bridges: [BridgeLine]
        var label: String
        let selection = overrideTransport ?? configuration.transport
        if !overrideBridges.isEmpty {
            bridges = overrideBridges
            label = "bridges given on the command line"
        } else if selection == .direct {
            return RoutePlan(route: "direct", options: [], transports: [], notes: notes)
        } else if let transport = selection.transport {
            let chosen = BridgeSelection(configuration: configuration, transports: [transport], builtins: builtins)
            bridges = chosen.lines
            label = "\(transport)"
            if chosen.transportsUsingBuiltins.contains(transport) {
                label += ", built-in"
                notes.append("no enabled \(transport) bridges of your own: using Tor Browser's built-in \(transport) bridges")
            }
            guard !bridges.isEmpty else {
                throw SessionError(.noBridges, "the transport is set to \(transport) but there are no enabled \(transport) bridges; add one with 'postern bridges add' or choose another with 'postern transport use'")
            }
        } else {
            // auto without connection assist (PosternSession uses ConnectionAssistant for auto): the
            // stored, enabled bridges when there are any, else direct.
            bridges = configuration.enabledBridges().map(\.line)
            if bridges.isEmpty {
                return RoutePlan(route: "direct", options: [], transports: [],
                                 notes: ["transport auto: no enabled bridges stored, connecting directly"])
            }
            label = Set(bridges.map(\.transport.rawValue)).sorted().joined(separator: ", ")
        }
        return try Self.bridges(bridges, label: label, notes: notes, pluginPorts: pluginPorts)
    }

    /// A plan that uses exactly `bridges` (one connection assist route, or a fixed selection).
    public static func bridges(_ bridges: [BridgeLine], label: String, notes: [String] = [],
                        pluginPorts: [TransportName: UInt16]) throws -> RoutePlan {
        var notes = notes
        let rendered: TorBridgeConfiguration
        do {
            rendered = try TorBridgeConfiguration(bridges: bridges)
        } catch {
            throw SessionError(.invalidBridges, error.message)
        }
        notes += rendered.warnings.map(\.message)
        var options: [TorOption] = []
        let lines = try rendered.torrcLines(ports: pluginPorts.isEmpty ? placeholderPorts(rendered) : pluginPorts)
        for line in lines {
            let parts = line.split(separator: " ", maxSplits: 1)
            options.append(try TorOption(String(parts[0]), parts.count > 1 ? String(parts[1]) : ""))
        }
        return RoutePlan(route: RouteName(label.hasPrefix("bridges (") ? label : "bridges (\(label))"), options: options,
                         transports: rendered.transportsNeedingPlugin, notes: notes, bridges: rendered.bridges)
    }

    /// Lets a plan be made before listeners exist (to learn which transports it needs).
    private static func placeholderPorts(_ rendered: TorBridgeConfiguration) -> [TransportName: UInt16] {
        Dictionary(uniqueKeysWithValues: rendered.transportsNeedingPlugin.map { ($0, UInt16(1)) })
    }
}
