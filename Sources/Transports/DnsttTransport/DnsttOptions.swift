import PosternLinkSpec
import TransportBase

/// One dnstt bridge's arguments, validated before any network activity (``DnsttArgumentRules``).
/// Errors name the argument and the reason, never its value.
public struct DnsttOptions: Sendable, Hashable {
    /// The recursive resolver the queries go to.
    public enum Resolver: Sendable, Hashable {
        /// DNS over HTTPS: POST to this exact URL.
        case doh(url: String)
        /// DNS over TLS.
        case dot(host: String, port: UInt16)
        /// Plain DNS over UDP.
        case udp(host: String, port: UInt16)
    }

    public let resolver: Resolver
    /// The server's X25519 public key (32 bytes).
    public let publicKey: [UInt8]
    /// The tunnel's zone.
    public let domain: DnsName
    /// The client's KCP MTU under `domain` (``DnsttWire/mtu(domain:)``).
    public let mtu: Int

    /// Checks `arguments` by `DnsttArgumentRules`, the same rules bridge lines are checked with. A
    /// repeated key keeps its first value.
    public init(arguments: TransportArguments) throws(TransportError) {
        var review = BridgeArgumentReview(transport: DnsttArgumentRules().transport,
                                          arguments: BridgeArguments(keepingFirstOf: arguments.pairs.map { (key: $0.key, value: $0.value) }))
        do {
            self = try DnsttArgumentRules.options(&review)
        } catch {
            throw TransportError(code: .invalidArguments, kind: .invalidInput,
                                 message: error.key.map { "dnstt argument \($0): \(error.reason)" } ?? error.reason)
        }
    }

    init(resolver: Resolver, publicKey: [UInt8], domain: DnsName, mtu: Int) {
        self.resolver = resolver
        self.publicKey = publicKey
        self.domain = domain
        self.mtu = mtu
    }
}
