import Foundation
import PosternLinkSpec
import TransportTLS

/// The snowflake arguments of a bridge line (equivalently, the per-connection SOCKS arguments),
/// validated the way the reference client reads them (snowflake v2.x client/snowflake.go and client/torrc).
public struct SnowflakeOptions: Hashable, Sendable {
    /// A STUN server from `ice=`.
    public struct STUNServer: Hashable, Sendable, CustomStringConvertible {
        public let host: String
        public let port: UInt16
        public var description: String { "stun:\(host):\(port)" }
    }

    public enum Rendezvous: Hashable, Sendable {
        /// POST to the broker (optionally domain-fronted).
        case http(BrokerEndpoint)
        /// GET through an AMP cache at `cache` (requires `url` as well).
        case ampCache(BrokerEndpoint, cache: URL)
    }

    public let rendezvous: Rendezvous
    /// Every usable `ice=` entry (stun: only), in bridge-line order.
    public let stunServers: [STUNServer]
    /// Proxies kept per SOCKS connection (`max=`, at least 1).
    public let maxProxies: Int
    /// 40 hex characters, upper case: the bridge the broker must pick.
    public let fingerprint: String
    /// `utls-imitate=`, lower-cased, as written.
    public let utlsImitate: String?
    public let utlsNoSNI: Bool
    /// The ClientHello profile of the broker, front and AMP cache connections: the one
    /// `utls-imitate=` names (TransportTLS's registry), or Tor Browser's `hellorandomizedalpn` when
    /// absent, with the reason when it is a substitute.
    public let tls: BrowserTLSProfile.Choice
    /// SNI is sent unless `utls-nosni` is set together with `utls-imitate` (as upstream).
    public var sendsServerName: Bool { !(utlsImitate != nil && utlsNoSNI) }

    /// Refuses what this client does not do (SQS rendezvous), checks `arguments` by
    /// `SnowflakeArgumentRules` (the same rules bridge lines are checked with) and builds the
    /// typed options. Messages name the argument and the reason, never the value.
    public init(arguments: BridgeArguments) throws(SnowflakeError) {
        if arguments["sqsqueue"] != nil || arguments["sqscreds"] != nil {
            throw SnowflakeError(code: .unsupported, kind: .invalidInput, message: "SQS rendezvous (sqsqueue=) is not supported")
        }
        var review = BridgeArgumentReview(transport: SnowflakeArgumentRules().transport, arguments: arguments)
        do {
            try SnowflakeArgumentRules().review(&review)
        } catch {
            let message = error.key.map { "the \($0)= argument: \(error.reason)" } ?? error.reason
            throw SnowflakeError(code: .brokerURL, kind: .invalidInput, message: message)
        }
        // From here on the values are well formed; what is left is turning them into types.
        func unreadable(_ key: String) -> SnowflakeError {
            SnowflakeError(code: .brokerURL, kind: .invalidInput, message: "the \(key)= argument: not a URL this client can use")
        }
        guard let urlText = arguments["url"], let url = URL(string: urlText) else { throw unreadable("url") }
        // fronts= (even empty) wins over front=; both are comma-separated.
        let frontList = (arguments["fronts"] ?? arguments["front"] ?? "").split(separator: ",").map(String.init)
        let endpoint = try BrokerEndpoint(url: url, fronts: frontList)
        if let cacheText = arguments["ampcache"] {
            guard let cache = URL(string: cacheText), cache.host != nil else { throw unreadable("ampcache") }
            rendezvous = .ampCache(endpoint, cache: cache)
        } else {
            rendezvous = .http(endpoint)
        }
        var servers: [STUNServer] = []
        for entry in (arguments["ice"] ?? "").split(separator: ",") {
            // Only STUN is used; anything else (turn:, stuns:) is skipped, as upstream does.
            guard entry.lowercased().hasPrefix("stun:") else { continue }
            let hostPort = entry.dropFirst(5)
            if let colon = hostPort.lastIndex(of: ":"), !hostPort.hasSuffix("]"),
               let port = UInt16(hostPort[hostPort.index(after: colon)...]) {
                servers.append(STUNServer(host: String(hostPort[..<colon]), port: port))
            } else {
                servers.append(STUNServer(host: String(hostPort), port: 3478))
            }
        }
        stunServers = servers
        maxProxies = max(1, arguments["max"].flatMap { Int($0) } ?? 1)
        fingerprint = arguments["fingerprint"].flatMap { Fingerprint($0) }?.hex ?? ClientPollRequest.defaultFingerprint
        utlsImitate = arguments["utls-imitate"]?.lowercased()
        utlsNoSNI = ["true", "yes"].contains((arguments["utls-nosni"] ?? "").lowercased())
        do {
            tls = try BrowserTLSProfile.forSnowflake(utlsImitate: utlsImitate)
        } catch {
            throw SnowflakeError(code: .unsupported, kind: .invalidInput, message: "the utls-imitate= argument: \(error.message)")
        }
    }

    /// The STUN servers one rendezvous uses: shuffled, and only the first half (rounded up) when
    /// there are more than two, as the reference client does.
    public func selectedSTUNServers<G: RandomNumberGenerator>(using generator: inout G) -> [STUNServer] {
        var servers = stunServers.shuffled(using: &generator)
        if servers.count > 2 { servers = Array(servers.prefix((servers.count + 1) / 2)) }
        return servers
    }
}
