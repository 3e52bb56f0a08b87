import PosternLinkSpec

/// Chooses which bridges tor should get for the transports in use: the user's enabled bridges of
/// each transport, or, for a transport where the user has none enabled, the built-in ones.
/// A built-in line that has the identity or address of any custom bridge (even a disabled one) is
/// left out, so a custom bridge is never silently replaced or resurrected by a built-in.
public struct BridgeSelection: Hashable, Sendable {
    public let lines: [BridgeLine]
    /// Transports for which built-in bridges were used, for the caller to report.
    public let transportsUsingBuiltins: [TransportName]

    public init(configuration: BridgeConfiguration, transports: [TransportName], builtins: BuiltinBridges?) {
        var lines: [BridgeLine] = []
        var usingBuiltins: [TransportName] = []
        let customIdentities = Set(configuration.bridges.map(\.line.identity))
        let customAddresses = Set(configuration.bridges.map(\.line.address))
        for transport in transports {
            let custom = configuration.enabledBridges(of: transport).map(\.line)
            if !custom.isEmpty {
                lines += custom
            } else if let builtins {
                let fallback = builtins.lines(for: transport).filter {
                    !customIdentities.contains($0.identity) && !customAddresses.contains($0.address)
                }
                if !fallback.isEmpty {
                    lines += fallback
                    usingBuiltins.append(transport)
                }
            }
        }
        self.lines = lines
        self.transportsUsingBuiltins = usingBuiltins
    }
}

/// The bridge part of tor's configuration, rendered from validated lines:
/// `UseBridges 1` and one `Bridge` line each, plus the transports that need a
/// `ClientTransportPlugin` line once the core knows their SOCKS ports.
public struct TorBridgeConfiguration: Hashable, Sendable {
    /// `UseBridges 1` followed by `Bridge ...` lines, in order. Contains secrets: never log it.
    public let lines: [String]
    /// The bridges as tor will see them (host-name addresses replaced by placeholders).
    public let bridges: [BridgeLine]
    /// Transport names that need a `ClientTransportPlugin` line (everything but vanilla), sorted.
    public let transportsNeedingPlugin: [TransportName]
    /// For example: a bridge dropped because it shares its IP:port with an earlier one.
    public let warnings: [BridgeConfigDiagnostic]

    /// Renders `bridges`. tor identifies a bridge by its IP:port, so every line must have a distinct
    /// one and an IP literal. Bridges whose transport ignores the address (snowflake, meek_lite,
    /// webtunnel, dnstt) get a free placeholder from 192.0.2.0/24 (TEST-NET-1, never routed) when they use
    /// a host name or collide; any other collision drops the later bridge with a warning.
    public init(bridges input: [BridgeLine]) throws(BridgeConfigError) {
        let addressIgnoring: Set<TransportName> = [.snowflake, .meekLite, .webtunnel, .dnstt]
        var used = Set<BridgeAddress>()
        var rendered: [BridgeLine] = []
        var warnings: [BridgeConfigDiagnostic] = []
        var nextPlaceholder = 1
        func freePlaceholder(port: UInt16) -> BridgeAddress? {
            while nextPlaceholder < 255 {
                let candidate = BridgeAddress(host: .ipv4("192.0.2.\(nextPlaceholder)"), port: port)
                nextPlaceholder += 1
                if !used.contains(candidate) && !input.contains(where: { $0.address == candidate }) { return candidate }
            }
            return nil
        }
        for (offset, line) in input.enumerated() {
            var address = line.address
            if address.isHostName || used.contains(address) {
                guard addressIgnoring.contains(line.transport), let placeholder = freePlaceholder(port: address.port) else {
                    warnings.append(BridgeConfigDiagnostic(code: .addressCollision,
                        message: "bridge \(offset + 1) (\(line.transport.description(policy: .safe))) has the same address as an earlier bridge and was left out; tor needs a distinct IP:port per bridge"))
                    continue
                }
                address = placeholder
            }
            used.insert(address)
            rendered.append(BridgeLine(transport: line.transport, address: address,
                                       fingerprint: line.fingerprint, arguments: line.arguments))
        }
        guard !rendered.isEmpty else {
            throw BridgeConfigError(code: .noBridgesForTransport, kind: .conflict,
                                    message: "there are no enabled bridges for the selected transport")
        }
        self.bridges = rendered
        self.lines = ["UseBridges 1"] + rendered.map(\.torrcLine)
        self.transportsNeedingPlugin = Set(rendered.map(\.transport)).filter { !$0.isVanilla }.sorted()
        self.warnings = warnings
    }

    /// `ClientTransportPlugin NAME socks5 127.0.0.1:PORT` for every transport that needs one, given
    /// the ports the transports listen on. A missing port is an error rather than a bridge that
    /// silently never connects.
    public func clientTransportPluginLines(ports: [TransportName: UInt16]) throws(BridgeConfigError) -> [String] {
        try transportsNeedingPlugin.map { (name) throws(BridgeConfigError) -> String in
            guard let port = ports[name], port != 0 else {
                throw BridgeConfigError(code: .missingTransportPort, kind: .conflict,
                                        message: "no local port is known for the transport \(name.description(policy: .safe))")
            }
            return "ClientTransportPlugin \(name) socks5 127.0.0.1:\(port)"
        }
    }

    /// All lines for tor: the bridge lines followed by the plugin lines.
    public func torrcLines(ports: [TransportName: UInt16]) throws(BridgeConfigError) -> [String] {
        lines + (try clientTransportPluginLines(ports: ports))
    }
}
