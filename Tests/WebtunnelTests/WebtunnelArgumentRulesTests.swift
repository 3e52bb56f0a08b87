import PosternLinkSpec
import Testing
import TransportBase
import TransportTLS
@testable import WebtunnelTransport

/// One implementation of webtunnel's argument rules: what a bridge line is refused for, tor's SOCKS
/// arguments are refused for too, with the same reason and without the url (the bridge's secret).
struct WebtunnelArgumentRulesTests {
    let rules = BridgeArgumentRulebook([WebtunnelArgumentRules()])

    @Test(arguments: [
        ("url=https://example.org/secret%zz", BridgeLineError.Code.badURL),
        ("url=https://example.org//secretpath", .badURL),
        ("url=ftp://example.org/secretpath", .badURL),
        ("url=https://example.org/secretpath servername=bad_name", .badServerName),
        ("url=https://example.org/secretpath utls=HelloNotAThing", .badUTLS),
        ("ver=0.0.1", .missingURL),
    ])
    func lineAndSocksArgumentsAreRefusedForTheSameReason(words: String, code: BridgeLineError.Code) throws {
        let lineError = try #require(throws: BridgeLineError.self) {
            try BridgeLine.parse("webtunnel [2001:db8::1]:443 \(words)", rules: rules)
        }
        #expect(lineError.code == code)
        let pairs = words.split(separator: " ").map { word -> TransportArguments.Pair in
            let parts = word.split(separator: "=", maxSplits: 1)
            return TransportArguments.Pair(key: String(parts[0]), value: String(parts[1]))
        }
        let socksError = try #require(throws: TransportError.self) {
            try WebtunnelTransport().configuration(from: TransportArguments(pairs))
        }
        #expect(socksError.code == .invalidArguments)
        // "word 3 (url): REASON" or, for a missing argument, "REASON"; at dial time "webtunnel argument url: REASON".
        let reason = lineError.message.split(separator: ":", maxSplits: 1).count == 2 && lineError.message.hasPrefix("word ")
            ? String(lineError.message.split(separator: ":", maxSplits: 1)[1].dropFirst()) : lineError.message
        #expect(socksError.message.hasSuffix(": " + reason), "\(socksError.message) / \(lineError.message)")
        #expect(!lineError.message.contains("secretpath") && !socksError.message.contains("secretpath"))
    }

    @Test func anAcceptedLineGivesTheOptionsItsArgumentsGiveAtDialTime() throws {
        let line = try BridgeLine(validating: "webtunnel tunnel.example.org:443 url=https://example.org/wt?x=1 servername=front.example utls=", rules: rules)
        let options = try WebtunnelOptions(arguments: TransportArguments(line.arguments.map { .init(key: $0.key, value: $0.value) }))
        #expect(options.requestTarget == "/wt" && options.serverName == "front.example" && options.tls.profile == .randomizedNoALPN)
    }
}
