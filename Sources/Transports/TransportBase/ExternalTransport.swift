/// One transport name served by an external managed client (`ManagedPluginClient`), as a
/// `PluggableTransport` like Postern's own: tor's in-process listener, `postern bridges test` and
/// A/B trials all dial it the same way, and none of them needs to know it is a separate program.
///
/// A dial starts the plugin if needed, then speaks SOCKS5 to the plugin's loopback listener exactly
/// as tor would (pt-spec §5): the bridge's arguments escaped as tor escapes them (`\` and `;`),
/// in the RFC 1929 user name, split after 255 bytes into the password (a lone NUL when they fit),
/// no authentication when there are none; then CONNECT to the bridge's IP:port. The plugin's reply
/// comes after its own handshake (obfs4proxy) or at once (snowflake-client); `dialTimeout` bounds
/// both. The arguments never appear in argv, the environment or an error. The bridge's address is
/// permitted through the plugin's egress gate first (``ManagedPluginClient/permitEgress(to:)``).
public struct ExternalTransport: PluggableTransport {
    public let name: TransportName
    public let client: ManagedPluginClient
    public let dialTimeout: Duration

    public init(name: TransportName, client: ManagedPluginClient, dialTimeout: Duration = .seconds(60)) {
        self.name = name
        self.client = client
        self.dialTimeout = dialTimeout
    }

    /// The SOCKS user name and password that carry `arguments` (nil: no arguments, no auth).
    public static func socksCredentials(for arguments: TransportArguments) throws(TransportError) -> (username: String, password: String)? {
        guard !arguments.pairs.isEmpty else { return nil }
        func escape(_ text: String) -> String {
            var out = String.UnicodeScalarView()
            for scalar in text.unicodeScalars {
                if scalar == "\\" || scalar == ";" { out.append("\\") }
                out.append(scalar)
            }
            return String(out)
        }
        let encoded = arguments.pairs.map { escape($0.key) + "=" + escape($0.value) }.joined(separator: ";")
        let bytes = Array(encoded.utf8)
        // goptlib refuses bytes >= 0x80, and a split after 255 bytes must not cut a UTF-8 sequence.
        guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
            throw TransportError(code: .invalidArguments, kind: .invalidInput,
                                 message: "transport arguments: an external transport takes only printable ASCII arguments")
        }
        guard bytes.count <= 510 else {
            throw TransportError(code: .invalidArguments, kind: .invalidInput,
                                 message: "transport arguments: longer than 510 bytes, which SOCKS cannot carry")
        }
        if bytes.count <= 255 { return (encoded, "\u{0}") }
        return (String(decoding: bytes[..<255], as: UTF8.self), String(decoding: bytes[255...], as: UTF8.self))
    }

    public func configuration(from arguments: TransportArguments) throws(TransportError) -> TransportArguments {
        _ = try Self.socksCredentials(for: arguments)
        return arguments
    }

    public func dial(_ endpoint: TransportEndpoint, configuration: TransportArguments, context: DialContext) async throws -> any TransportConnection {
        do {
            let connection = try await dialThroughPlugin(endpoint, configuration: configuration, context: context)
            context.events.emit(TransportEvent(kind: .connected, severity: .info, transport: name,
                                               message: "connected through \(client.definition.label)"))
            return connection
        } catch {
            // The events reach `run`'s output: a broken plugin is named there, not only in a SOCKS reply code.
            let message = (error as? TransportError)?.message ?? "\(client.definition.label): \(error)"
            context.events.emit(TransportEvent(kind: .dialFailed, severity: Task.isCancelled ? .debug : .warning, transport: name,
                                               message: message))
            throw error
        }
    }

    private func dialThroughPlugin(_ endpoint: TransportEndpoint, configuration: TransportArguments,
                                   context: DialContext) async throws -> any TransportConnection {
        // Before the plugin is asked: with an egress gate, the plugin reaches nothing else.
        client.permitEgress(to: endpoint)
        let plugin = try await client.endpoint(for: name, proxy: context.dialer.proxy)
        if let notice = client.takeEgressNotice() {
            context.events.emit(TransportEvent(kind: .egressUnrestricted, severity: .notice, transport: name, message: notice))
        }
        let proxy: UpstreamProxy
        if let credentials = try Self.socksCredentials(for: configuration) {
            proxy = try UpstreamProxy(endpoint: plugin, username: credentials.username, password: credentials.password)
        } else {
            proxy = try UpstreamProxy(endpoint: plugin)
        }
        do {
            return try await OutboundDialer.through(proxy).connect(to: endpoint, timeout: dialTimeout)
        } catch let error as TransportError {
            // Say which program failed; the message already holds no bridge address.
            throw TransportError(code: error.code, kind: error.kind, message: "\(client.definition.label): \(error.message)")
        }
    }
}
