import BridgeConfig
import Foundation
import PosternLinkSpec
import PosternSystem
import SnowflakeTransport
import TransportBase
import TransportTLS
import WebtunnelTransport

/// What `postern transport fingerprint` shows, as a library: for each TLS connection a configured
/// route makes (snowflake's broker, directly or through a front or an AMP cache; webtunnel's
/// server), the profile its bridge line asks for and the JA3 and JA4 of the ClientHello it would
/// send, made by NSS in memory (``ClientHelloFingerprint/init(presentedBy:)``): nothing goes on the
/// network. The real server name goes into that hello (its length decides NSS's padding) but never
/// into the result: a row names the bridge by its store ID or built-in index only.
public struct RouteTLSFingerprint: Sendable, Hashable, Codable {
    /// Store ID, "builtin-<transport>-<n>", or "profile" for a profile asked for by name.
    public let bridge: String
    /// snowflake, webtunnel, or nil for a profile asked for by name.
    public let transport: String?
    /// "broker", "broker through a front", "AMP cache", "AMP cache through a front", "server".
    public let connection: String
    /// The `utls-imitate=` / `utls=` value (lower-cased), or nil when the line names none.
    public let requestedProfile: String?
    /// The profile sent (``BrowserTLSProfile/name``); nil when a plugin serves the transport.
    public let profile: String?
    /// True when every connection draws another hello: the JA3 and JA4 are one draw's.
    public let randomized: Bool
    /// Why the profile is not the one asked for, when it is not.
    public let substitution: String?
    /// Whether the hello carries SNI (not for an IP literal, nor with snowflake's `utls-nosni`).
    public let sendsServerName: Bool
    /// ALPN as the hello offers it; empty when it offers none.
    public let applicationProtocols: [String]
    /// The hello's JA3 (MD5); nil when the connection has no TLS (an http:// broker).
    public let ja3: String?
    /// The hello's JA4; nil when the connection has no TLS.
    public let ja4: String?
    /// The executable of the external plugin that serves this transport instead of Postern
    /// (`transport plugin add --replace-builtin`): the hello is the plugin's own, not shown.
    public let plugin: String?

    /// The rows for the enabled stored snowflake and webtunnel bridges and the built-in ones, in
    /// that order. A line whose arguments this client cannot use is left out, as a dial would fail;
    /// a transport an external plugin serves gets a row naming the plugin and no fingerprint.
    public static func configured(_ configuration: BridgeConfiguration) throws(TransportError) -> [RouteTLSFingerprint] {
        var candidates = configuration.enabledBridges().map { (id: $0.id.rawValue, line: $0.line) }
        if let builtins = try? BuiltinBridges.bundled(rules: Transports.argumentRules) {
            for transport in [TransportName.snowflake, .webtunnel] {
                candidates += builtins.lines(for: transport).enumerated().map { ("builtin-\(transport.rawValue)-\($0.offset + 1)", $0.element) }
            }
        }
        var rows: [RouteTLSFingerprint] = []
        for candidate in candidates {
            if let plugin = Transports.plugin(serving: candidate.line.transport.rawValue, in: configuration.plugins) {
                guard [TransportName.snowflake, .webtunnel].contains(candidate.line.transport) else { continue }
                rows.append(RouteTLSFingerprint(bridge: candidate.id, transport: candidate.line.transport.rawValue, connection: "plugin",
                                                requestedProfile: nil, profile: nil, randomized: false, substitution: nil,
                                                sendsServerName: false, applicationProtocols: [], ja3: nil, ja4: nil,
                                                plugin: plugin.executable))
            } else if let row = try row(bridge: candidate.id, line: candidate.line) {
                rows.append(row)
            }
        }
        return rows
    }

    /// The row for a profile asked for by name (``BrowserTLSProfile/named(_:)``), offering
    /// `applicationProtocols` to a server named `serverName`.
    public static func profile(named name: String, serverName: String = "www.example.com",
                               applicationProtocols: [String] = ["h2", "http/1.1"]) throws(TransportError) -> RouteTLSFingerprint {
        let choice = try BrowserTLSProfile.choice(forName: name)
        return try make(bridge: "profile", transport: nil, connection: "any", choice: choice,
                        serverName: serverName, sendsServerName: true, applicationProtocols: applicationProtocols)
    }

    private static func row(bridge: String, line: BridgeLine) throws(TransportError) -> RouteTLSFingerprint? {
        switch line.transport {
        case .snowflake:
            guard let options = try? SnowflakeOptions(arguments: line.arguments) else { return nil }
            let choice = options.tls
            let connection: String, scheme: String, host: String
            switch options.rendezvous {
            case .http(let endpoint):
                scheme = endpoint.url.scheme?.lowercased() ?? "https"
                connection = endpoint.fronts.isEmpty ? "broker" : "broker through a front"
                host = endpoint.fronts.first.map(frontHost) ?? endpoint.url.host ?? ""
            case .ampCache(let endpoint, let cache):
                scheme = cache.scheme?.lowercased() ?? "https"
                connection = endpoint.fronts.isEmpty ? "AMP cache" : "AMP cache through a front"
                if let front = endpoint.fronts.first {
                    host = frontHost(front)
                } else {
                    let prefix = (try? AMPCacheURL.domainPrefix(endpoint.url.host ?? "")) ?? "broker"
                    host = prefix + "." + (cache.host ?? "")
                }
            }
            guard !host.isEmpty else { return nil }
            let sendsName = options.sendsServerName
            guard scheme == "https" else {
                return RouteTLSFingerprint(bridge: bridge, transport: line.transport.rawValue, connection: connection,
                                           requestedProfile: choice.requestedName, profile: choice.profile.name,
                                           randomized: choice.profile.isRandomized, substitution: choice.substitution,
                                           sendsServerName: false, applicationProtocols: [], ja3: nil, ja4: nil, plugin: nil)
            }
            return try make(bridge: bridge, transport: line.transport.rawValue, connection: connection, choice: choice, serverName: host,
                            sendsServerName: sendsName, applicationProtocols: BrowserTLSConnector.brokerApplicationProtocols)
        case .webtunnel:
            let arguments = TransportArguments(line.arguments.map { TransportArguments.Pair(key: $0.key, value: $0.value) })
            guard let options = try? WebtunnelOptions(arguments: arguments) else { return nil }
            let choice = options.tls
            guard options.scheme == .https else {
                return RouteTLSFingerprint(bridge: bridge, transport: line.transport.rawValue, connection: "server",
                                           requestedProfile: choice.requestedName, profile: choice.profile.name,
                                           randomized: choice.profile.isRandomized, substitution: choice.substitution,
                                           sendsServerName: false, applicationProtocols: [], ja3: nil, ja4: nil, plugin: nil)
            }
            return try make(bridge: bridge, transport: line.transport.rawValue, connection: "server", choice: choice,
                            serverName: options.serverName, sendsServerName: true,
                            applicationProtocols: WebtunnelTransport.applicationProtocols)
        default:
            return nil
        }
    }

    /// A front's host without its port ("front.example:443").
    private static func frontHost(_ front: String) -> String {
        String(front.split(separator: ":", maxSplits: 1).first ?? "")
    }

    private static func make(bridge: String, transport: String?, connection: String, choice: BrowserTLSProfile.Choice,
                             serverName: String, sendsServerName: Bool, applicationProtocols: [String]) throws(TransportError) -> RouteTLSFingerprint {
        let configuration = BrowserTLSConfiguration(serverName: serverName, applicationProtocols: applicationProtocols, profile: choice.profile,
                                                    sendsServerName: sendsServerName)
        let hello = try ClientHelloFingerprint(presentedBy: configuration)
        return RouteTLSFingerprint(bridge: bridge, transport: transport, connection: connection, requestedProfile: choice.requestedName,
                                   profile: choice.profile.name, randomized: choice.profile.isRandomized,
                                   substitution: choice.substitution, sendsServerName: hello.hasServerName,
                                   applicationProtocols: hello.applicationProtocols, ja3: hello.ja3, ja4: hello.ja4, plugin: nil)
    }
}

extension RouteTLSFingerprint {
    /// The rows as a table, then what a substituted profile stands in for and why.
    public static func text(_ rows: [RouteTLSFingerprint]) -> String {
        guard !rows.isEmpty else { return "no snowflake or webtunnel route (no TLS hello to show)" }
        let table = PlainText.table(
            header: ["BRIDGE", "CONNECTION", "ASKS FOR", "PROFILE", "SNI", "ALPN", "JA4", "JA3"],
            rows: rows.map { row in
                [row.bridge, [row.transport, row.connection].compactMap { $0 }.joined(separator: " "),
                 row.requestedProfile ?? "-", (row.profile ?? "-") + (row.randomized ? " (one draw)" : ""),
                 row.ja4 == nil ? "-" : row.sendsServerName ? "yes" : "no",
                 row.applicationProtocols.isEmpty ? "-" : row.applicationProtocols.joined(separator: ","),
                 row.ja4 ?? (row.plugin.map { "the plugin's own (\($0))" } ?? "no TLS"), row.ja3 ?? "-"]
            })
        var notes: [String] = []
        for row in rows {
            guard let reason = row.substitution, let asked = row.requestedProfile else { continue }
            let note = "\(asked) -> \(row.profile ?? "-"): \(reason)"
            if !notes.contains(note) { notes.append(note) }
        }
        if rows.contains(where: \.randomized) {
            notes.append("randomized profiles send a different hello on every connection; run again to see another draw")
        }
        return ([table] + notes).joined(separator: "\n")
    }
}
