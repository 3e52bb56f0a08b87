import PosternLinkSpec
import TransportBase
import TransportTLS

/// One webtunnel bridge's arguments, validated before any network activity (spec §2, lyrebird
/// v0.5.0's parseArgs). Errors name the argument and the reason, never its value: the url is the
/// bridge's secret.
public struct WebtunnelOptions: Sendable, Hashable {
    public enum Scheme: String, Sendable, Hashable {
        case https, http
        var defaultPort: UInt16 { self == .https ? 443 : 80 }
    }

    public let scheme: Scheme
    /// The url's host as written, without brackets for IPv6 (Go's `url.Hostname()`): what is
    /// resolved.
    public let urlHost: String
    public let port: UInt16
    /// `/` + the escaped path without its leading `/`: the request target.
    public let requestTarget: String
    /// `servername=` or the url host: the TLS server name (SNI and certificate check) and the
    /// HTTP `Host` header.
    public let serverName: String
    /// The ClientHello profile `utls=` asks for (TransportTLS's registry; absent or empty:
    /// lyrebird 0.7's default, `hellorandomizednoalpn`), with the reason when it is a substitute.
    public let tls: BrowserTLSProfile.Choice

    /// Checks `arguments` by `WebtunnelArgumentRules`, the same rules bridge lines are checked
    /// with. A repeated key keeps its first value, as lyrebird reads tor's arguments.
    public init(arguments: TransportArguments) throws(TransportError) {
        var review = BridgeArgumentReview(transport: WebtunnelArgumentRules().transport,
                                          arguments: BridgeArguments(keepingFirstOf: arguments.pairs.map { (key: $0.key, value: $0.value) }))
        do {
            self = try WebtunnelArgumentRules.options(&review)
        } catch {
            throw TransportError(code: .invalidArguments, kind: .invalidInput,
                                 message: error.key.map { "webtunnel argument \($0): \(error.reason)" } ?? error.reason)
        }
    }

    init(scheme: Scheme, urlHost: String, port: UInt16, requestTarget: String, serverName: String, tls: BrowserTLSProfile.Choice) {
        self.scheme = scheme
        self.urlHost = urlHost
        self.port = port
        self.requestTarget = requestTarget
        self.serverName = serverName
        self.tls = tls
    }

    /// True when `host` is an IP literal (no resolution, and an IP check instead of a name check).
    var serverNameIsIPLiteral: Bool { Self.ipv4Bytes(serverName) != nil || serverName.contains(":") }

    static func ipv4Bytes(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.utf8.count <= 3, part.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let value = UInt8(part) else { return nil }
            bytes.append(value)
        }
        return bytes
    }
}
