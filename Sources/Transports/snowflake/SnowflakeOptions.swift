import BridgeConfig
import Foundation

/// The snowflake arguments of a bridge line (equivalently, the per-connection SOCKS arguments),
/// validated the way the reference client reads them (docs/specs/snowflake.md section 2).
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
    /// 40 (or 64) hex characters: the bridge the broker must pick.
    public let fingerprint: String
    /// `utls-imitate=`, lower-cased; recorded, not applied (no uTLS here yet).
    public let utlsImitate: String?
    public let utlsNoSNI: Bool

    public static let knownUTLSNames: Set<String> = [
        "hellorandomizedalpn", "hellorandomizednoalpn", "hellofirefox_auto", "hellofirefox_55", "hellofirefox_56",
        "hellofirefox_63", "hellofirefox_65", "hellochrome_auto", "hellochrome_58", "hellochrome_62", "hellochrome_70",
        "hellochrome_72", "helloios_auto", "helloios_11_1", "helloios_12_1",
    ]

    public init(arguments: BridgeArguments) throws(SnowflakeError) {
        func invalid(_ message: String) -> SnowflakeError {
            SnowflakeError(code: .brokerURL, kind: .invalidInput, message: message)
        }
        if arguments["sqsqueue"] != nil || arguments["sqscreds"] != nil {
            throw SnowflakeError(code: .unsupported, kind: .invalidInput, message: "SQS rendezvous (sqsqueue=) is not supported")
        }
        guard let urlText = arguments["url"], let url = URL(string: urlText) else {
            throw invalid("a snowflake bridge needs url= (the broker URL)")
        }
        // fronts= (even empty) wins over front=; both are comma-separated.
        let frontList = (arguments["fronts"] ?? arguments["front"] ?? "").split(separator: ",").map(String.init)
        let endpoint = try BrokerEndpoint(url: url, fronts: frontList)
        if let cacheText = arguments["ampcache"], !cacheText.isEmpty {
            guard let cache = URL(string: cacheText), cache.scheme != nil, cache.host != nil, cache.query == nil,
                  cache.fragment == nil else {
                throw invalid("ampcache= must be a URL without query or fragment")
            }
            rendezvous = .ampCache(endpoint, cache: cache)
        } else {
            rendezvous = .http(endpoint)
        }
        var servers: [STUNServer] = []
        for entry in (arguments["ice"] ?? "").split(separator: ",") {
            let text = entry.trimmingCharacters(in: .whitespaces)
            // Only STUN is used; anything else (turn:, stuns:) is skipped, as upstream does.
            guard text.lowercased().hasPrefix("stun:") else { continue }
            let hostPort = text.dropFirst(5)
            if let colon = hostPort.lastIndex(of: ":"), !hostPort.hasSuffix("]") {
                guard let port = UInt16(hostPort[hostPort.index(after: colon)...]), port > 0 else {
                    throw invalid("an ice= STUN server has an invalid port")
                }
                servers.append(STUNServer(host: String(hostPort[..<colon]), port: port))
            } else {
                servers.append(STUNServer(host: String(hostPort), port: 3478))
            }
        }
        stunServers = servers
        if let maxText = arguments["max"] {
            guard let value = Int(maxText) else { throw invalid("max= must be an integer") }
            maxProxies = max(1, value)
        } else {
            maxProxies = 1
        }
        let fingerprint = arguments["fingerprint"] ?? ""
        if fingerprint.isEmpty {
            self.fingerprint = ClientPollRequest.defaultFingerprint
        } else {
            guard fingerprint.utf8.count == 40 || fingerprint.utf8.count == 64,
                  fingerprint.allSatisfy(\.isHexDigit) else {
                throw invalid("fingerprint= must be 40 (or 64) hexadecimal characters")
            }
            self.fingerprint = fingerprint.uppercased()
        }
        if let name = arguments["utls-imitate"] {
            guard Self.knownUTLSNames.contains(name.lowercased()) else { throw invalid("utls-imitate= names an unknown ClientHello") }
            utlsImitate = name.lowercased()
        } else {
            utlsImitate = nil
        }
        utlsNoSNI = ["true", "yes"].contains((arguments["utls-nosni"] ?? "").lowercased())
    }

    /// The STUN servers one rendezvous uses: shuffled, and only the first half (rounded up) when
    /// there are more than two, as the reference client does.
    public func selectedSTUNServers<G: RandomNumberGenerator>(using generator: inout G) -> [STUNServer] {
        var servers = stunServers.shuffled(using: &generator)
        if servers.count > 2 { servers = Array(servers.prefix((servers.count + 1) / 2)) }
        return servers
    }
}
