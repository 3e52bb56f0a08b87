import Testing
@testable import BridgeConfig

@Suite("Nostr relays")
struct NostrRelayTests {
    @Test(arguments: [
        ("  relay.example.com  ", "wss://relay.example.com"),
        ("wss://Relay.Example.COM/", "wss://relay.example.com"),
        ("https://relay.example.com:443", "wss://relay.example.com"),
        ("http://relay.example.com:80/", "ws://relay.example.com"),
        ("ws://relay.example.com:8080/nostr", "ws://relay.example.com:8080/nostr"),
        ("WSS://relay.example.com/path#frag", "wss://relay.example.com/path"),
        ("wss://relay.example.com/#x", "wss://relay.example.com"),
        ("wss://relay.example.com/?a=1", "wss://relay.example.com/?a=1"),
        ("abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrstuvwx.onion", "wss://abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrstuvwx.onion"),
        ("ws://[2001:DB8::1]:7777", "ws://[2001:db8::1]:7777"),
        ("ws://relay.example.com:443", "ws://relay.example.com"),
    ])
    func normalization(input: String, expected: String) throws {
        let relay = try NostrRelayURL(normalizing: input)
        #expect(relay.rawValue == expected)
        #expect(try NostrRelayURL(normalizing: relay.rawValue) == relay)
    }

    @Test(arguments: ["", "   ", "ftp://relay.example.com", "wss://", "wss://user@relay.example.com",
                      "wss://relay example.com", "wss://relay.example.com:99999", "wss:relay.example.com", "wss://-bad.example"])
    func malformedRelaysAreRejected(input: String) {
        #expect {
            try NostrRelayURL(normalizing: input)
        } throws: { error in
            let error = error as? BridgeConfigError
            return error?.code == .malformedRelay && error?.message == "that is not a relay address (try wss://host)"
        }
    }

    @Test func builtinsCountAsDuplicatesAndTheCapIsEight() throws {
        var configuration = BridgeConfiguration()
        do {
            try configuration.addRelay("https://relay.damus.io/")
            Issue.record("accepted a built-in relay")
        } catch {
            #expect(error.code == .duplicateRelay)
            #expect(error.message == "wss://relay.damus.io is already in the relay list")
        }
        for index in 1...8 { try configuration.addRelay("relay\(index).example.net") }
        #expect(throws: BridgeConfigError.self) { try configuration.addRelay("relay1.example.net") }
        do {
            try configuration.addRelay("relay9.example.net")
            Issue.record("accepted a ninth relay")
        } catch {
            #expect(error.code == .tooManyRelays)
            #expect(error.message == "you can add up to 8 relays")
        }
        #expect(configuration.allRelays.count == 12)
        try configuration.removeRelay("WSS://RELAY3.example.net:443/")
        #expect(configuration.customRelays.count == 7)
        #expect(throws: BridgeConfigError.self) { try configuration.removeRelay("wss://nos.lol") }
    }
}
