/// The upstream proxy (`TOR_PT_PROXY`) Postern gives an external plugin whose transports connect
/// to the bridge's own address (obfs4, obfs3, obfs2, scramblesuit), so that its SOCKS listener is
/// no tunnel to anywhere for other local accounts.
///
/// pt-spec leaves a managed client's SOCKS listener open to every local user: anyone on the machine
/// who finds its port can ask it for an obfs4 connection to any address. Postern cannot close that
/// listener, but it decides where the plugin's own connections may go. The plugin is told to make
/// every outgoing connection through this gate, a SOCKS5 listener on 127.0.0.1 that
/// - admits only connections the plugin's process opened (the kernel's socket table and the
///   plugin's /proc/PID/fd, as for the in-process listeners; ``SocksAdmission/Clients/childProcess(_:)``),
/// - connects only to destinations Postern permitted before it asked the plugin for them (the
///   bridges it dials, ``permit(_:)``), refusing anything else with SOCKS reply 2 before dialling,
/// - and reaches them directly or through the user's own upstream proxy.
/// A stranger using the plugin's listener therefore reaches nothing but the user's bridges, which
/// it could reach without the plugin.
///
/// Plugins whose transports connect elsewhere than the SOCKS target (snowflake, meek_lite,
/// webtunnel: a broker, a front, the URL's host) cannot be narrowed this way and keep pt-spec's
/// open listener; so does a plugin that does not accept `TOR_PT_PROXY` (docs/SECURITY.md).
final class PluginEgressGate: Sendable {
    /// Transports that connect to the SOCKS target itself (pt-spec §5's bridge address).
    static let bridgeAddressedTransports: Set<String> = ["obfs4", "obfs3", "obfs2", "scramblesuit"]

    /// How long the gate's own connect to a permitted destination may take (the plugin's handshake
    /// after it has its own deadline).
    static let connectTimeout: Duration = .seconds(30)

    private let server: PTSocksServer

    /// The `TOR_PT_PROXY` value for the plugin.
    let proxy: UpstreamProxy

    var endpoint: TransportEndpoint { server.endpoint }

    /// `admission` holds the permitted destinations and the plugin's process, and outlives restarts;
    /// `upstream` is the user's own proxy, if any.
    init(admission: SocksAdmission, upstream: UpstreamProxy?) throws(TransportError) {
        // Its refusals are not warned about: a stranger knocking on the gate reaches nothing, and a
        // destination refused to the plugin fails the dial that asked for it, which says so.
        let server = try PTSocksServer(transport: DirectEgress(), events: .discard,
                                       dialer: upstream.map(OutboundDialer.through) ?? .direct, admission: admission)
        do {
            proxy = try UpstreamProxy(endpoint: server.endpoint)
        } catch {
            server.stop()
            throw error
        }
        self.server = server
    }

    func stop() { server.stop() }

    /// The gate's "transport": a plain TCP connection (through the user's proxy when there is one).
    private struct DirectEgress: PluggableTransport {
        let name = TransportName("plugin_egress")!

        func configuration(from arguments: TransportArguments) throws(TransportError) {
            guard arguments.pairs.isEmpty else {
                throw TransportError(code: .invalidArguments, kind: .invalidInput, message: "the plugin egress gate takes no arguments")
            }
        }

        func dial(_ endpoint: TransportEndpoint, configuration: Void, context: DialContext) async throws -> any TransportConnection {
            try await context.dialer.connect(to: endpoint, timeout: PluginEgressGate.connectTimeout)
        }
    }
}
