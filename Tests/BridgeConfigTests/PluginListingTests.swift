import BridgeConfig
import PosternLinkSpec
import PosternRuntime
import Testing

/// `postern transport plugin` results without the CLI: the listing, the table, the notes on add.
@Suite("Plugin listing and notes")
struct PluginListingTests {
    @Test func pluginListingTableAndStoredNotes() throws {
        let obfs4 = try TransportPlugin(names: [.obfs4], executable: "/usr/bin/obfs4proxy", arguments: ["-log", "a b"])
        let meek = try TransportPlugin(names: [.meekLite, try TransportName(validating: "obfs3")], executable: "/usr/bin/obfs4proxy")
        let listing = PluginListing(obfs4)
        #expect(listing.names == ["obfs4"] && listing.path == "/usr/bin/obfs4proxy" && listing.routes == ["plugin:obfs4"] && !listing.replacesBuiltin)
        #expect(PluginListing.text([obfs4, meek]) == """
            NAMES            USED FOR         COMMAND
            obfs4            plugin:obfs4     /usr/bin/obfs4proxy -log 'a b'
            meek_lite,obfs3  meek_lite,obfs3  /usr/bin/obfs4proxy
            """)
        #expect(PluginListing.text([]).hasPrefix("no plugins (add one with"))
        #expect(obfs4.storedText == """
            stored the plugin obfs4: /usr/bin/obfs4proxy
            obfs4: Postern keeps using its own obfs4; the plugin is used where asked for ('postern ab obfs4 plugin:obfs4'); add it with --replace-builtin to use it everywhere
            """)
        #expect(obfs4.replacingBuiltins().storedText.hasSuffix("\nobfs4: the plugin replaces Postern's own obfs4 everywhere"))
        #expect(meek.storedText == "stored the plugin meek_lite,obfs3: /usr/bin/obfs4proxy")
        #expect(meek.removedText == "removed the plugin meek_lite,obfs3: /usr/bin/obfs4proxy")
        #expect(obfs4.replacementProblem == nil && obfs4.replacingBuiltins().replacementProblem == nil)
        #expect(meek.replacingBuiltins().replacementProblem?.hasSuffix("; meek_lite,obfs3 is none") == true)
    }
}
