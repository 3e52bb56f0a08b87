import BridgeConfig
import DnsttTransport
import Foundation
import Obfs4Transport
import PosternLinkSpec
import SnowflakeTransport
import TransportBase
import WebtunnelTransport

/// The transports Postern offers, assembled explicitly (no transport knows another): its
/// own obfs4, snowflake and webtunnel, and the user's external plugins (`postern transport plugin`).
///
/// A plugin serves its names unless one is a name Postern implements itself and the plugin was not
/// added with --replace-builtin: then Postern's own transport keeps the name, and the plugin is
/// used only where asked for by name (an A/B route `plugin:obfs4` runs its child with the plugin
/// marked as replacing).
public enum Transports {
    /// One transport Postern implements: its bridge-line rules (which its module also runs at dial
    /// time) and how to make it, with its default waits (nil) or every wait shortened to one
    /// handshake timeout (health checks that must flag a silent bridge quickly).
    public struct Builtin: Sendable {
        /// The transport's bridge-line rules (its name among them).
        public let rules: any BridgeArgumentRules
        /// Makes the transport: its default waits (nil), or every wait shortened to a handshake timeout.
        public let make: @Sendable (_ handshakeTimeout: Duration?) -> any PluggableTransport
    }

    /// Postern's own transports, one line each: adding a transport is its module and one line here.
    public static let builtins: [Builtin] = [
        Builtin(rules: Obfs4ArgumentRules()) { handshake in
            handshake.map { Obfs4Transport(connectTimeout: $0, handshakeTimeout: $0, retryForOldBridges: true) } ?? Obfs4Transport()
        },
        Builtin(rules: SnowflakeArgumentRules()) { handshake in
            handshake.map { SnowflakeTransport(proxyPatience: $0 * 2, waitsForDataChannel: true) } ?? SnowflakeTransport()
        },
        Builtin(rules: WebtunnelArgumentRules()) { handshake in
            handshake.map { WebtunnelTransport(connectTimeout: $0, resolveTimeout: $0, handshakeTimeout: $0) } ?? WebtunnelTransport()
        },
        Builtin(rules: DnsttArgumentRules()) { handshake in
            handshake.map { DnsttTransport(handshakeTimeout: $0, resolveTimeout: $0) } ?? DnsttTransport()
        },
    ]

    /// The names Postern implements itself.
    public static let builtinNames: [String] = builtins.map(\.rules.transport.rawValue)

    /// The argument rules bridge lines are checked with: each built-in transport's own, and the
    /// rules of transports that only ever run as plugins. Every parse of a bridge line, a paste or
    /// the store goes through this rulebook; a transport missing here is accepted with an
    /// `unknownTransport` warning and its arguments are not checked.
    public static let argumentRules = BridgeArgumentRulebook(builtins.map(\.rules) + [
        // Plugin-only (no Postern module), so its rules live in BridgeConfig.
        MeekLiteArgumentRules(),
    ])

    /// Postern's transports and the user's `plugins`. Plugins keep their state in
    /// `stateLocation`/pt_state (default: the user's state directory). A plugin's process starts
    /// on its first dial and belongs to this registry: ``TransportRegistry/stopPlugins()`` (or the
    /// session the registry is given to) stops it.
    public static func registry(plugins: [TransportPlugin] = [], stateLocation: URL? = nil) throws -> TransportRegistry {
        try assemble(own: builtins.map { $0.make(nil) }, plugins: plugins, stateLocation: stateLocation, dialTimeout: .seconds(60))
    }

    /// The same transports with their waits shortened to `handshakeTimeout`, for health checks
    /// that must flag a silent bridge quickly (`postern bridges test`).
    public static func registry(handshakeTimeout: Duration, plugins: [TransportPlugin] = [], stateLocation: URL? = nil) throws -> TransportRegistry {
        try assemble(own: builtins.map { $0.make(handshakeTimeout) }, plugins: plugins, stateLocation: stateLocation,
                     dialTimeout: handshakeTimeout * 2)
    }

    /// The plugins that serve `name` in a registry built from `plugins` (for messages and `ab`).
    public static func plugin(serving name: String, in plugins: [TransportPlugin]) -> TransportPlugin? {
        plugins.first { plugin in
            plugin.names.contains { $0.rawValue == name } && (plugin.replacesBuiltin || !builtinNames.contains(name))
        }
    }

    /// Where plugins keep their state when the caller names no place: the user's Postern state
    /// directory (PosternPaths), private to the user, never a shared temporary directory where
    /// another account could create `pt_state` first.
    static var defaultStateLocation: URL { PosternPaths(configDirectoryOverride: nil).stateDirectory }

    private static func assemble(own: [any PluggableTransport], plugins: [TransportPlugin], stateLocation: URL?,
                                 dialTimeout: Duration) throws -> TransportRegistry {
        var external: [String: any PluggableTransport] = [:]
        for plugin in plugins {
            let served = plugin.names.filter { plugin.replacesBuiltin || !builtinNames.contains($0.rawValue) }
            guard !served.isEmpty else { continue }
            let state = (stateLocation ?? defaultStateLocation).appendingPathComponent("pt_state").path
            let client = ManagedPluginClient(.init(names: plugin.names,
                                                   executable: plugin.executable, arguments: plugin.arguments,
                                                   stateLocation: state))
            for name in served {
                external[name.rawValue] = ExternalTransport(name: name, client: client,
                                                            dialTimeout: dialTimeout)
            }
        }
        var registry = TransportRegistry()
        for transport in own where external[transport.name.rawValue] == nil { try registry.register(transport) }
        for transport in external.values { try registry.register(transport) }
        return registry
    }
}

extension TransportRegistry {
    /// Stops the plugin processes of this registry's external transports, each once (stdin closed,
    /// SIGTERM, SIGKILL after a grace); those of other registries run on.
    public func stopPlugins() async {
        var seen = Set<ObjectIdentifier>()
        for name in names {
            guard let external = transport(named: name) as? ExternalTransport,
                  seen.insert(ObjectIdentifier(external.client)).inserted else { continue }
            await external.client.stop()
        }
    }

    /// A note for each transport an external plugin serves ("note: NAME bridges go through the
    /// external LABEL, started when first needed"), in the registry's order.
    public var externalTransportNotes: [String] {
        names.compactMap { name in
            (transport(named: name) as? ExternalTransport).map {
                "note: \(name) bridges go through the external \($0.client.definition.label), started when first needed"
            }
        }
    }
}
