import PosternLinkSpec
import Testing
import TransportBase
@testable import DnsttTransport

/// dnstt's argument rules: Orbot's built-in and generated lines, Moat's SOCKS arguments, and the
/// refusals, the same for a bridge line and for tor's SOCKS arguments, never showing a value.
struct DnsttArgumentRulesTests {
    let rules = BridgeArgumentRulebook([DnsttArgumentRules()])
    static let key = "07a37cbc142093c8b755dc1b10e86cb426374ad16aa853ed0bdfc0b2b86d1c7c"
    static let fingerprint = "2B280B23E1107BB62ABFC40DDCC8824814F80A72"

    /// Orbot's built-in line shape (placeholder 192.0.2.4, a fingerprint, doh=).
    @Test func orbotBuiltInLine() throws {
        let parsed = try BridgeLine.parse(
            "dnstt 192.0.2.4:80 \(Self.fingerprint) doh=https://dns.google/dns-query pubkey=\(Self.key) domain=t.ruhnama.net", rules: rules)
        #expect(parsed.warnings.isEmpty)
        let options = try DnsttOptions(arguments: TransportArguments(parsed.line.arguments.map { .init(key: $0.key, value: $0.value) }))
        #expect(options.resolver == .doh(url: "https://dns.google/dns-query"))
        #expect(options.publicKey == bytes(hex: Self.key))
        #expect(options.domain.description == "t.ruhnama.net")
        #expect(options.mtu == 134)
    }

    /// Orbot's generated lines: udp=, no fingerprint; the key normalised to lower case.
    @Test func orbotUDPLineWithoutFingerprint() throws {
        let parsed = try BridgeLine.parse("dnstt 192.0.2.4:81 udp=185.51.200.2:53 pubkey=\(Self.key.uppercased()) domain=t2.bypasscensorship.org",
                                          rules: rules)
        #expect(parsed.line.fingerprint == nil)
        #expect(parsed.line.arguments["pubkey"] == Self.key)
        let options = try DnsttOptions(arguments: TransportArguments(parsed.line.arguments.map { .init(key: $0.key, value: $0.value) }))
        #expect(options.resolver == .udp(host: "185.51.200.2", port: 53))
        #expect(options.mtu == 128)
    }

    /// Moat's tunnel passes SOCKS arguments directly: `doh=…;pubkey=…;domain=…`.
    @Test func moatSocksArguments() throws {
        let arguments = try TransportArguments(parsing: "doh=https://dns.google/dns-query;pubkey=\(Self.key);domain=t.example.com")
        let options = try DnsttOptions(arguments: arguments)
        #expect(options.resolver == .doh(url: "https://dns.google/dns-query"))
        #expect(options.mtu == 134)
    }

    @Test func resolverPrecedenceWarnsAboutTheOthers() throws {
        let parsed = try BridgeLine.parse("dnstt 192.0.2.4:1 udp=[2001:db8::53]:53 dot=dns.example:853 doh=https://dns.example/q pubkey=\(Self.key) domain=t.example.com",
                                          rules: rules)
        #expect(parsed.warnings.map(\.code) == [.unusedArgument, .unusedArgument])
        let dot = try DnsttOptions(arguments: TransportArguments(parsing: "udp=[2001:db8::53]:53;dot=dns.example:853;pubkey=\(Self.key);domain=t.example.com"))
        #expect(dot.resolver == .dot(host: "dns.example", port: 853))
        let udp = try DnsttOptions(arguments: TransportArguments(parsing: "udp=[2001:db8::53]:53;pubkey=\(Self.key);domain=t.example.com"))
        #expect(udp.resolver == .udp(host: "2001:db8::53", port: 53))
    }

    @Test(arguments: [
        ("pubkey=\(key) domain=t.example.com", BridgeLineError.Code.missingResolver),
        ("doh=http://secret.example/dns-query pubkey=\(key) domain=t.example.com", .badURL),
        ("doh=secret.example pubkey=\(key) domain=t.example.com", .badURL),
        ("udp=secret.example pubkey=\(key) domain=t.example.com", .badResolver),
        ("udp=secret.example:0 pubkey=\(key) domain=t.example.com", .badResolver),
        ("dot=[2001:db8::1] pubkey=\(key) domain=t.example.com", .badResolver),
        ("udp=192.0.2.9:53 domain=t.example.com", .missingPublicKey),
        ("udp=192.0.2.9:53 pubkey=\(key.dropLast(2)) domain=t.example.com", .badPublicKey),
        ("udp=192.0.2.9:53 pubkey=\(key.dropLast(1))g domain=t.example.com", .badPublicKey),
        ("udp=192.0.2.9:53 pubkey=\(key)", .missingDomain),
        ("udp=192.0.2.9:53 pubkey=\(key) domain=secret..example", .badDomain),
        ("udp=192.0.2.9:53 pubkey=\(key) domain=secret_zone.example", .badDomain),
        ("udp=192.0.2.9:53 pubkey=\(key) domain=\(String(repeating: "secretlabel.", count: 12))example", .badDomain),
    ])
    func lineAndSocksArgumentsAreRefusedForTheSameReason(words: String, code: BridgeLineError.Code) throws {
        let lineError = try #require(throws: BridgeLineError.self) {
            try BridgeLine.parse("dnstt 192.0.2.4:1 \(words)", rules: rules)
        }
        #expect(lineError.code == code)
        let pairs = words.split(separator: " ").map { word -> TransportArguments.Pair in
            let parts = word.split(separator: "=", maxSplits: 1)
            return TransportArguments.Pair(key: String(parts[0]), value: String(parts[1]))
        }
        let socksError = try #require(throws: TransportError.self) { try DnsttOptions(arguments: TransportArguments(pairs)) }
        #expect(socksError.code == .invalidArguments)
        let reason = lineError.message.split(separator: ":", maxSplits: 1).count == 2 && lineError.message.hasPrefix("word ")
            ? String(lineError.message.split(separator: ":", maxSplits: 1)[1].dropFirst()) : lineError.message
        #expect(socksError.message.hasSuffix(reason), "\(socksError.message) / \(lineError.message)")
        for secret in ["secret", Self.key, "192.0.2.9"] {
            #expect(!lineError.message.contains(secret) && !socksError.message.contains(secret), "\(lineError.message) / \(socksError.message)")
        }
    }
}
