import PosternLinkSpec

/// dnstt's argument rules (the PT fork used by Orbot and IPtProxy, tladesignz/dnstt
/// dnstt-client/lib/client.go; the dnstt protocol notes §5): the one implementation behind both
/// the bridge-line check and `DnsttOptions(arguments:)`, which reads tor's SOCKS arguments at dial
/// time. Reasons never contain a value: the resolver, the key and the domain are the bridge's
/// secrets.
///
/// - one resolver: `doh=` (an https URL), `dot=` or `udp=` (`host:port`, the port required). With
///   several, `doh` wins, then `dot`, then `udp`, as in the fork; the others get a warning;
/// - `pubkey=`: 64 hexadecimal digits, either case (normalised to lower case);
/// - `domain=`: the tunnel zone, a host name whose names leave room for KCP packets of at least 80
///   bytes.
///
/// The address is a placeholder (Orbot's lines use 192.0.2.4:N) and the fingerprint is optional
/// (Orbot's generated `udp=` lines have none).
public struct DnsttArgumentRules: BridgeArgumentRules {
    public init() {}

    public var transport: TransportName { .dnstt }
    public var acceptsHostNameAddress: Bool { true }

    public func review(_ review: inout BridgeArgumentReview) throws(BridgeArgumentProblem) {
        _ = try Self.options(&review)
    }

    static func options(_ review: inout BridgeArgumentReview) throws(BridgeArgumentProblem) -> DnsttOptions {
        review.warnAboutUnknownKeys(known: ["doh", "dot", "udp", "pubkey", "domain"])
        let resolver: DnsttOptions.Resolver
        if let url = review["doh"] {
            guard url.lowercased().hasPrefix("https://"), BridgeArgumentSyntax.isHTTPURL(url) else {
                throw BridgeArgumentProblem(.badURL, key: "doh", "doh must be an https:// URL with a host")
            }
            resolver = .doh(url: url)
            for key in ["dot", "udp"] where review[key] != nil {
                review.warn(.unusedArgument, key: key, "doh= is used; dnstt reads only one resolver")
            }
        } else if let address = review["dot"] {
            guard let (host, port) = hostAndPort(address) else {
                throw BridgeArgumentProblem(.badResolver, key: "dot", "dot must be host:port (a name or an IP address, and a port)")
            }
            resolver = .dot(host: host, port: port)
            if review["udp"] != nil {
                review.warn(.unusedArgument, key: "udp", "dot= is used; dnstt reads only one resolver")
            }
        } else if let address = review["udp"] {
            guard let (host, port) = hostAndPort(address) else {
                throw BridgeArgumentProblem(.badResolver, key: "udp", "udp must be host:port (a name or an IP address, and a port)")
            }
            resolver = .udp(host: host, port: port)
        } else {
            throw BridgeArgumentProblem(.missingResolver, key: nil, "a dnstt bridge needs a resolver: doh=, dot= or udp=")
        }

        guard let keyText = review["pubkey"] else {
            throw BridgeArgumentProblem(.missingPublicKey, key: "pubkey", "a dnstt bridge needs pubkey= (the server's key)")
        }
        guard let publicKey = hexBytes(keyText), publicKey.count == 32 else {
            throw BridgeArgumentProblem(.badPublicKey, key: "pubkey", "pubkey is 64 hexadecimal characters")
        }
        if keyText != keyText.lowercased() { review.normalize("pubkey", to: keyText.lowercased()) }

        guard let domainText = review["domain"] else {
            throw BridgeArgumentProblem(.missingDomain, key: "domain", "a dnstt bridge needs domain= (the tunnel's zone)")
        }
        let bare = domainText.hasSuffix(".") ? String(domainText.dropLast()) : domainText
        guard BridgeArgumentSyntax.isHostName(bare), let domain = DnsName(parsing: bare) else {
            throw BridgeArgumentProblem(.badDomain, key: "domain", "domain must be a domain name")
        }
        guard let mtu = try? DnsttWire.mtu(domain: domain) else {
            throw BridgeArgumentProblem(.badDomain, key: "domain",
                                        "domain is too long: it leaves room for fewer than \(DnsttWire.minimumMTU) bytes per query")
        }
        return DnsttOptions(resolver: resolver, publicKey: publicKey, domain: domain, mtu: mtu)
    }

    /// `host:port` or `[ipv6]:port`, the port required (Go's net.SplitHostPort, as the fork reads it).
    static func hostAndPort(_ text: String) -> (host: String, port: UInt16)? {
        guard BridgeArgumentSyntax.isHostAndOptionalPort(Substring(text)) else { return nil }
        let host: Substring
        let port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[close...].hasPrefix("]:") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        guard let value = UInt16(port), value > 0 else { return nil }
        return (String(host), value)
    }

    static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        func value(_ byte: UInt8) -> UInt8? {
            switch byte {
            case 0x30...0x39: byte - 0x30
            case 0x61...0x66: byte - 0x61 + 10
            case 0x41...0x46: byte - 0x41 + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }
}
