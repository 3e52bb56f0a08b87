import Foundation
import PosternLinkSpec
import Testing
@testable import SnowflakeTransport

@Suite struct OptionsTests {
    /// Through PosternLinkSpec's bridge-line parser, with snowflake's rules (which SnowflakeOptions
    /// applies again).
    func options(_ line: String) throws -> SnowflakeOptions {
        try SnowflakeOptions(arguments: try BridgeLine(validating: line, rules: BridgeArgumentRulebook([SnowflakeArgumentRules()])).arguments)
    }

    /// Straight from k=v words, as SOCKS arguments arrive from tor: SnowflakeOptions' own checks.
    func socksOptions(_ words: String) throws -> SnowflakeOptions {
        let pairs = words.split(separator: " ").map { word -> (key: String, value: String) in
            let parts = word.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
        }
        return try SnowflakeOptions(arguments: try BridgeArguments(pairs))
    }

    /// snowflake's client/torrc line (snowflake v2.x client/torrc).
    @Test func shippedBridgeLine() throws {
        let o = try options("snowflake 192.0.2.3:80 2B280B23E1107BB62ABFC40DDCC8824814F80A72 fingerprint=2B280B23E1107BB62ABFC40DDCC8824814F80A72 url=https://1098762253.rsc.cdn77.org/ fronts=www.cdn77.com,www.phpmyadmin.net ice=stun:stun.antisip.com:3478,stun:stun.epygi.com:3478,stun:stun.uls.co.za:3478,stun:stun.voipgate.com:3478,stun:stun.mixvoip.com:3478,stun:stun.nextcloud.com:3478,stun:stun.bethesda.net:3478,stun:stun.nextcloud.com:443 utls-imitate=hellorandomizedalpn")
        guard case .http(let endpoint) = o.rendezvous else { Issue.record("expected HTTP rendezvous"); return }
        #expect(endpoint.url.host == "1098762253.rsc.cdn77.org")
        #expect(endpoint.fronts == ["www.cdn77.com", "www.phpmyadmin.net"])
        #expect(o.stunServers.count == 8)
        #expect(o.stunServers.last == .init(host: "stun.nextcloud.com", port: 443))
        #expect(o.maxProxies == 1)
        #expect(o.fingerprint == "2B280B23E1107BB62ABFC40DDCC8824814F80A72")
        #expect(o.utlsImitate == "hellorandomizedalpn")
        var generator = SystemRandomNumberGenerator()
        let selected = o.selectedSTUNServers(using: &generator)
        #expect(selected.count == 4)
        #expect(Set(selected).isSubset(of: Set(o.stunServers)))
    }

    @Test func iceKeepsOnlySTUNAndAddsTheDefaultPort() throws {
        let o = try options("snowflake 192.0.2.3:80 url=https://b.example/ ice=turn:t.example:3478,stun:s.example,stun:127.0.5.2:3478")
        #expect(o.stunServers == [.init(host: "s.example", port: 3478), .init(host: "127.0.5.2", port: 3478)])
        #expect(o.fingerprint == ClientPollRequest.defaultFingerprint)
    }

    @Test func emptyFrontsStillHidesFront() throws {
        let o = try options("snowflake 192.0.2.3:80 url=https://b.example/ fronts= front=f.example")
        guard case .http(let endpoint) = o.rendezvous else { Issue.record("expected HTTP rendezvous"); return }
        #expect(endpoint.fronts.isEmpty)
        let legacy = try options("snowflake 192.0.2.3:80 url=https://b.example/ front=f.example,g.example")
        guard case .http(let legacyEndpoint) = legacy.rendezvous else { Issue.record("expected HTTP rendezvous"); return }
        #expect(legacyEndpoint.fronts == ["f.example", "g.example"])
    }

    @Test func ampCacheNeedsURL() throws {
        let o = try options("snowflake 192.0.2.3:80 url=https://b.example/ ampcache=https://cdn.ampproject.org/")
        guard case .ampCache(_, let cache) = o.rendezvous else { Issue.record("expected AMP rendezvous"); return }
        #expect(cache.host == "cdn.ampproject.org")
        #expect(throws: SnowflakeError.self) { try socksOptions("ampcache=https://cdn.ampproject.org/") }
    }

    @Test func badValuesAreRejectedWithAReason() throws {
        for words in ["url=https://b.example/ max=two",
                      "url=https://b.example/ fingerprint=XYZ",
                      "url=https://b.example/ utls-imitate=hellonetscape",
                      "url=https://b.example/ ice=stun:s.example:99999",
                      "url=ftp://b.example/",
                      "sqsqueue=https://sqs.us-east-1.amazonaws.com/1/q sqscreds=x"] {
            #expect(throws: SnowflakeError.self, "\(words)") { try socksOptions(words) }
        }
        #expect(try socksOptions("url=https://b.example/ max=0").maxProxies == 1)
    }

    @Test func testBedBridgeLineParses() throws {
        let bed = try SnowflakeTestBed.require()
        let o = try options(bed["TB_BRIDGE_SNOWFLAKE"])
        #expect(o.fingerprint == bed.fingerprint)
        #expect(o.stunServers.map(\.description) == [bed["TB_SNOWFLAKE_STUN"]])
    }
}
