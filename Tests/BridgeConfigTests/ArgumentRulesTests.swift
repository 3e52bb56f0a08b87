import PosternLinkSpec
import Testing
@testable import BridgeConfig

/// A transport that exists only in this test: its rules require `key=` (lower-cased on the way in)
/// and warn about `old=`, and its address is a placeholder.
private struct ExampleRules: BridgeArgumentRules {
    var transport: TransportName { TransportName("example_pt")! }
    var acceptsHostNameAddress: Bool { true }

    func review(_ review: inout BridgeArgumentReview) throws(BridgeArgumentProblem) {
        guard let key = review["key"] else { throw BridgeArgumentProblem(.missingCert, key: "key", "example_pt needs key=") }
        guard key.utf8.allSatisfy({ ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) }) else {
            throw BridgeArgumentProblem(.badCert, key: "key", "key is letters only")
        }
        review.normalize("key", to: key.lowercased())
        if review["old"] != nil { review.warn(.unusedArgument, key: "old", "old= is not read") }
    }
}

@Suite("Argument rules and the rulebook")
struct ArgumentRulesTests {
    let example = BridgeArgumentRulebook([ExampleRules()])

    @Test func posternsRulebookHasOneEntryPerTransportItKnows() {
        #expect(posternRules.transports == [.dnstt, .meekLite, .obfs4, .snowflake, .webtunnel])
        #expect(posternRules.rules(for: .vanilla) == nil)
    }

    @Test func aTransportNotInTheRulebookIsAcceptedUncheckedWithAWarning() throws {
        let text = "obfs4 198.51.100.7:443 cert=short iat-mode=9"
        let parsed = try BridgeLine.parse(text, rules: .syntaxOnly)
        #expect(parsed.line.arguments["cert"] == "short")
        #expect(parsed.warnings.map(\.code) == [.unknownTransport])
        #expect(throws: BridgeLineError.self) { try BridgeLine.parse(text, rules: posternRules) }
        // Without rules nothing says the address is ignored, so it must be an IP address, as tor needs.
        let error = try #require(throws: BridgeLineError.self) {
            try BridgeLine.parse("example_pt bridge.example:443 key=abc", rules: .syntaxOnly)
        }
        #expect(error.message == "word 2 (address): tor needs an IP address here, not a host name")
    }

    @Test func theRulesOfANewTransportAreAskedAndTheirResultsShapedByTheParser() throws {
        let parsed = try BridgeLine.parse("Bridge example_pt bridge.example:443 key=AbC old=1", rules: example)
        #expect(parsed.line.arguments["key"] == "abc", "the rules' normalisation is kept")
        #expect(parsed.warnings.map(\.message) == [
            "word 3 (address): a host name instead of an IP address; example_pt does not use it, and tor's configuration gets a placeholder IP instead",
            "word 5 (old): old= is not read",
        ])
        let bad = try #require(throws: BridgeLineError.self) {
            try BridgeLine.parse("example_pt 192.0.2.1:443 key=a1", rules: example)
        }
        #expect(bad.code == .badCert && bad.kind == .invalidInput && bad.word == 3)
        #expect(bad.message == "word 3 (key): key is letters only")
        let unsafe = try #require(throws: BridgeLineError.self) {
            try BridgeLine.parse("example_pt 192.0.2.1:443 key=a1", rules: example, logging: .unsafe)
        }
        #expect(unsafe.message == "word 3 (key \"key=a1\"): key is letters only")
        // A missing key has no word to point at.
        let missing = try #require(throws: BridgeLineError.self) {
            try BridgeLine.parse("example_pt 192.0.2.1:443 other=1", rules: example)
        }
        #expect(missing.word == nil && missing.message == "example_pt needs key=")
    }

    @Test func aProblemShownWithoutALineNamesOnlyPrintableKeys() {
        #expect(BridgeArgumentProblem(.badCert, key: "cert", "bad").description == "cert: bad")
        #expect(BridgeArgumentProblem(.badCert, key: "AbC+/xyz==", "bad").description == "argument: bad")
        #expect(BridgeArgumentProblem(.missingURL, key: nil, "needs url=").description == "needs url=")
    }

    @Test func socksArgumentsKeepTheFirstOfARepeatedKey() {
        let arguments = BridgeArguments(keepingFirstOf: [("url", "a"), ("max", "2"), ("url", "b")])
        #expect(arguments.keys == ["url", "max"] && arguments["url"] == "a")
    }
}
