import BridgeConfig
import PosternAppLayer
import Testing

/// `postern relays` results without the CLI (PosternAppLayer): the listing and the report of each address.
@Suite("Relay listing and changes")
struct RelayListingTests {
    @Test func relayListingAndChangesAddressByAddress() throws {
        var configuration = BridgeConfiguration()
        let added = configuration.addRelays(["Relay.Example.org:443/", "ftp://x"])
        #expect(added.lines == ["added wss://relay.example.org", "not added: ftp://x: that is not a relay address (try wss://host)"])
        #expect(added.failed && added.text.hasSuffix("\nadded 1 relay; 1 not added"))
        let listing = NostrRelayListing(configuration)
        #expect(listing.custom == ["wss://relay.example.org"] && listing.maximumCustom == NostrRelayURL.maximumCustom)
        #expect(listing.text.hasPrefix("RELAY                    KIND\nwss://relay.damus.io     built-in\n"))
        #expect(listing.text.hasSuffix("wss://relay.example.org  custom\n4 built-in, 1 custom (up to 8 custom)"))
        let removed = configuration.removeRelays(["RELAY.example.org"])
        #expect(!removed.failed && removed.text == "removed wss://relay.example.org\nremoved 1 relay")
        #expect(configuration.customRelays.isEmpty)
        #expect(configuration.removeRelays(["nos.lol"]).text
                == "not removed: nos.lol: wss://nos.lol is built in and cannot be removed\nremoved 0 relays; 1 not removed")
    }
}
