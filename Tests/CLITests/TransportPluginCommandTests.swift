import PosternTestSupport
import Foundation
import Testing

/// `postern transport plugin` and plugin lines in a paste, run as a user runs them.
@Suite struct TransportPluginCommandTests {
    typealias Sandbox = SettingsCommandTests.Sandbox

    func listed(_ sandbox: borrowing Sandbox) async throws -> [[String: Any]] {
        let result = try await sandbox.run("transport", "plugin", "list", "--json")
        #expect(result.status == 0, "\(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
    }

    @Test func addListRemove() async throws {
        let sandbox = Sandbox()
        let added = try await sandbox.run("transport", "plugin", "add", "obfs4", "/usr/bin/obfs4proxy")
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.contains("Postern keeps using its own obfs4"))
        #expect(added.stdout.contains("plugin:obfs4"))
        let replacing = try await sandbox.run("transport", "plugin", "add", "--replace-builtin", "snowflake", "/usr/bin/snowflake-client",
                                        "-log", "/dev/null")
        #expect(replacing.status == 64, "an argument starting with - needs '--' before it")
        let snowflake = try await sandbox.run("transport", "plugin", "add", "--replace-builtin", "snowflake", "/usr/bin/snowflake-client")
        #expect(snowflake.status == 0, "\(snowflake.stderr)")
        let meek = try await sandbox.run("transport", "plugin", "add", "meek_lite,obfs3", "/usr/bin/obfs4proxy", "extra argument")
        #expect(meek.status == 0, "\(meek.stderr)")

        let plugins = try await listed(sandbox)
        #expect(plugins.count == 3)
        #expect(plugins[0]["routes"] as? [String] == ["plugin:obfs4"])
        #expect(plugins[1]["routes"] as? [String] == ["snowflake"])
        #expect(plugins[1]["replacesBuiltin"] as? Bool == true)
        #expect(plugins[2]["names"] as? [String] == ["meek_lite", "obfs3"])
        #expect(plugins[2]["arguments"] as? [String] == ["extra argument"])
        let table = try await sandbox.run("transport", "plugin", "list")
        #expect(table.stdout.contains("'extra argument'"))

        // The store holds them, 0600.
        let attributes = try FileManager.default.attributesOfItem(atPath: sandbox.storeFile.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)

        let conflict = try await sandbox.run("transport", "plugin", "add", "obfs3", "/usr/bin/obfs4proxy")
        #expect(conflict.status == 1)
        #expect(conflict.stderr.contains("already served"))

        let removed = try await sandbox.run("transport", "plugin", "remove", "obfs3")
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(try await listed(sandbox).count == 2)
        let unknown = try await sandbox.run("transport", "plugin", "remove", "obfs3")
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no plugin serves"))
    }

    @Test func usageErrorsExit64() async throws {
        let sandbox = Sandbox()
        for arguments in [["add"], ["add", "obfs4"], ["add", "9bad", "/usr/bin/obfs4proxy"], ["add", "obfs4", "relative/path"],
                          ["add", "vanilla", "/usr/bin/obfs4proxy"], ["add", "obfs4,obfs4", "/usr/bin/obfs4proxy"],
                          ["add", "--replace-builtin", "meek_lite", "/usr/bin/obfs4proxy"], ["remove"], ["remove", "a", "b"],
                          ["remove", "bad name"], ["list", "extra"], ["frobnicate"]] {
            let result = try await sandbox.run(["transport", "plugin"] + arguments)
            #expect(result.status == 64, "\(arguments): \(result.status) \(result.stderr)")
        }
        // Well formed but not runnable: a failure, not a usage error; nothing stored.
        let missing = try await sandbox.run("transport", "plugin", "add", "obfs4", "/nonexistent/obfs4proxy")
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("/nonexistent/obfs4proxy"))
        let plain = try sandbox.write("echo VERSION 1\n", named: "not-executable.sh")
        chmod(plain.path, 0o644)
        let notExecutable = try await sandbox.run("transport", "plugin", "add", "obfs4", plain.path)
        #expect(notExecutable.status == 1)
        #expect(notExecutable.stderr.contains("not executable"))
        #expect(try await listed(sandbox).isEmpty)
    }

    @Test func anABPluginRouteNeedsAPlugin() async throws {
        let sandbox = Sandbox()
        let result = try await sandbox.run("ab", "obfs4", "plugin:obfs4")
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("no plugin serves obfs4"))
        let help = try await sandbox.run("ab", "--help")
        #expect(help.stdout.contains("postern ab obfs4 plugin:obfs4"))
    }

    @Test func helpShowsExamples() async throws {
        let sandbox = Sandbox()
        for command in [["transport", "plugin"], ["transport", "plugin", "add"], ["transport", "plugin", "list"],
                        ["transport", "plugin", "remove"]] {
            let help = try await sandbox.run(command + ["--help"])
            #expect(help.status == 0)
            #expect(help.stdout.contains("Example"), "\(command)")
            #expect(help.stdout.contains("postern transport plugin"), "\(command)")
        }
    }

    @Test func aPastedPluginLineIsOfferedNeverStoredSilently() async throws {
        let sandbox = Sandbox()
        let paste = """
        UseBridges 1
        ClientTransportPlugin obfs4,meek_lite exec /usr/bin/obfs4proxy
        ClientTransportPlugin snowflake socks5 127.0.0.1:9999
        ClientTransportPlugin webtunnel exec relative/webtunnel-client
        \(SettingsCommandTests.line1)
        """
        let offered = try await sandbox.run("bridges", "add", "-", stdin: paste)
        #expect(offered.status == 0, "\(offered.stdout)\(offered.stderr)")
        #expect(offered.stdout.contains("line 2: plugin obfs4,meek_lite not stored (never silently); to use it, run: postern transport plugin add obfs4,meek_lite /usr/bin/obfs4proxy"))
        #expect(offered.stdout.contains("line 3: note: ClientTransportPlugin is ignored"))
        #expect(offered.stdout.contains("line 4: note: ClientTransportPlugin is ignored: the plugin's executable must be an absolute path"))
        #expect(try await listed(sandbox).isEmpty)
        SettingsCommandTests.expectNoSecrets(offered.stdout + offered.stderr)

        let dryRun = try await sandbox.run("bridges", "add", "-", "--accept-plugins", "--dry-run", stdin: paste)
        #expect(dryRun.status == 0)
        #expect(try await listed(sandbox).isEmpty)

        let accepted = try await sandbox.run("bridges", "add", "-", "--accept-plugins", "--json", stdin: paste)
        #expect(accepted.status == 0, "\(accepted.stdout)\(accepted.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(accepted.stdout.utf8)) as? [String: Any])
        let items = try #require(report["items"] as? [[String: Any]])
        #expect(items.contains { $0["status"] as? String == "plugin-stored" && $0["line"] as? Int == 2 })
        let plugins = try await listed(sandbox)
        #expect(plugins.count == 1)
        #expect(plugins.first?["names"] as? [String] == ["obfs4", "meek_lite"])
        #expect(plugins.first?["replacesBuiltin"] as? Bool == false)
    }
}
