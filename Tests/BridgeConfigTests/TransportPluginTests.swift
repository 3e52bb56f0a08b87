import Foundation
import PosternLinkSpec
import Testing
@testable import BridgeConfig

@Suite("Transport plugins in the store")
struct TransportPluginTests {
    @Test func pluginsRoundTripThroughTheStore() throws {
        let temporary = TemporaryDirectory()
        let store = try BridgeStore(directory: temporary.path)
        let obfs4 = try TransportPlugin(names: [.obfs4, .meekLite], executable: "/usr/bin/obfs4proxy", arguments: ["-enableLogging", "a b"])
        let snowflake = try TransportPlugin(names: [.snowflake], executable: "/usr/bin/snowflake-client", replacesBuiltin: true)
        try store.update { configuration in
            try configuration.addPlugin(obfs4)
            try configuration.addPlugin(snowflake)
        }
        let loaded = try store.load()
        #expect(loaded.plugins == [obfs4, snowflake])
        #expect(loaded.plugin(serving: .meekLite) == obfs4)
        #expect(fileMode(store.filePath) == 0o600)
        // Same names again replaces; an overlap is a conflict; removal by any of its names.
        let replaced = try TransportPlugin(names: [.obfs4, .meekLite], executable: "/usr/local/bin/lyrebird")
        try store.update { try $0.addPlugin(replaced) }
        #expect(try store.load().plugins == [replaced, snowflake])
        #expect(throws: BridgeConfigError.self) {
            try store.update { try $0.addPlugin(try TransportPlugin(names: [.meekLite], executable: "/bin/x")) }
        }
        try store.update { try $0.removePlugin(serving: .meekLite) }
        #expect(try store.load().plugins == [snowflake])
        #expect(replaced.addCommand == "postern transport plugin add obfs4,meek_lite /usr/local/bin/lyrebird")
        #expect(obfs4.addCommand == "postern transport plugin add obfs4,meek_lite /usr/bin/obfs4proxy -- -enableLogging 'a b'")
        #expect(snowflake.addCommand == "postern transport plugin add --replace-builtin snowflake /usr/bin/snowflake-client")
    }

    @Test(arguments: [[String](), ["vanilla"], ["obfs4", "obfs4"]])
    func badNamesAreRefused(names: [String]) throws {
        let names = try names.map { try TransportName(validating: $0) }
        #expect(throws: BridgeConfigError.self) { try TransportPlugin(names: names, executable: "/usr/bin/obfs4proxy") }
    }

    @Test(arguments: ["relative/path", "", "/with\nnewline", "/with\u{0}nul"])
    func badPathsAreRefused(path: String) {
        #expect(throws: BridgeConfigError.self) { try TransportPlugin(names: [.obfs4], executable: path) }
    }

    @Test func badArgumentsAreRefused() {
        #expect(throws: BridgeConfigError.self) { try TransportPlugin(names: [.obfs4], executable: "/x", arguments: ["a\nb"]) }
        #expect(throws: BridgeConfigError.self) {
            try TransportPlugin(names: [.obfs4], executable: "/x", arguments: Array(repeating: "a", count: 33))
        }
    }

    @Test(arguments: [
        "{\"version\": 1, \"bridges\": [], \"plugins\": [{\"names\": [\"obfs4\"], \"path\": \"relative\", \"arguments\": [], \"replacesBuiltin\": false}]}",
        "{\"version\": 1, \"bridges\": [], \"plugins\": [{\"names\": [\"9x\"], \"path\": \"/x\", \"arguments\": [], \"replacesBuiltin\": false}]}",
        "{\"version\": 1, \"bridges\": [], \"plugins\": [{\"names\": [\"obfs4\"], \"path\": \"/x\", \"arguments\": [], \"replacesBuiltin\": false}, {\"names\": [\"obfs4\"], \"path\": \"/y\", \"arguments\": [], \"replacesBuiltin\": false}]}",
        "{\"version\": 1, \"bridges\": [], \"plugins\": [{\"names\": [\"obfs4\"], \"path\": \"/x\"}]}",
    ])
    func invalidStoredPluginsMakeTheFileCorruptAndUntouched(text: String) throws {
        let temporary = TemporaryDirectory()
        let store = try BridgeStore(directory: temporary.path)
        try Data(text.utf8).write(to: URL(fileURLWithPath: store.filePath))
        #expect(throws: BridgeConfigError.self) { try store.load() }
        #expect(throws: BridgeConfigError.self) { try store.update { $0.torEnabled = false } }
        #expect(try String(contentsOfFile: store.filePath, encoding: .utf8) == text)
    }

    @Test func pastedPluginLinesAreOffersNotBridges() {
        let paste = BridgePaste.parse("""
        ClientTransportPlugin obfs4,meek_lite exec /usr/bin/obfs4proxy -enableLogging
        ClientTransportPlugin snowflake socks5 127.0.0.1:9999
        ClientTransportPlugin webtunnel exec relative/client
        ClientTransportPlugin obfs4
        """)
        #expect(paste.accepted.isEmpty && paste.rejected.isEmpty)
        #expect(paste.pluginOffers.count == 1)
        #expect(paste.pluginOffers.first?.plugin.names == [.obfs4, .meekLite])
        #expect(paste.pluginOffers.first?.plugin.arguments == ["-enableLogging"])
        #expect(paste.pluginOffers.first?.plugin.replacesBuiltin == false)
        #expect(paste.notes.map(\.location?.line) == [2, 3, 4])
    }

    /// Found by BridgeParserFuzzer (Fuzz/Regressions/BridgeParserFuzzer/plugin-name-echoed-in-a-note):
    /// the note for a bad plugin name repeated the word, which in a paste may be a cert or a key.
    @Test func aBadPluginNameIsNotRepeatedInTheNote() {
        let word = "Cert0123456789ABCDEF+abcdef/0123456789xyz"
        let paste = BridgePaste.parse("ClientTransportPlugin \(word) exec /usr/bin/obfs4proxy\n", logging: .safe)
        #expect(paste.pluginOffers.isEmpty)
        #expect(paste.notes.count == 1)
        #expect(paste.notes.allSatisfy { !$0.message.contains(word) }, "\(paste.notes.map(\.message))")
    }

    /// The check made when a plugin is added (the CLI's `plugin add` and a paste's accepted plugin).
    @Test func anExecutableIsCheckedBeforeItIsStored() throws {
        try TransportPlugin.checkExecutable("/bin/sh")
        let temporary = TemporaryDirectory()
        let plain = temporary.path + "/not-executable"
        #expect(FileManager.default.createFile(atPath: plain, contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o644]))
        for (path, reason) in [(temporary.path + "/missing", "cannot be used: No such file or directory"),
                               (temporary.path, "is not a regular file"), (plain, "is not executable")] {
            do throws(BridgeConfigError) {
                try TransportPlugin.checkExecutable(path)
                Issue.record("\(path) passed")
            } catch {
                #expect(error.code == .badPluginPath && error.message == "the plugin \(path) \(reason)")
            }
        }
    }

    /// A plugin for a name Postern implements itself is used as `plugin:NAME` unless it replaces it.
    @Test func routesSayWhereAPluginIsUsed() throws {
        let builtins = ["obfs4", "snowflake", "webtunnel"]
        let alongside = try TransportPlugin(names: [.obfs4, .meekLite], executable: "/usr/bin/obfs4proxy")
        #expect(alongside.routes(builtinNames: builtins) == ["plugin:obfs4", "meek_lite"])
        #expect(alongside.replacingBuiltins().routes(builtinNames: builtins) == ["obfs4", "meek_lite"])
    }
}
