import PosternTestSupport
import Foundation
import Testing

/// `postern transport limits` and the connection assist options of `postern run` that fail before
/// any tor starts.
@Suite struct ConnectionAssistCommandTests {
    typealias Sandbox = SettingsCommandTests.Sandbox

    @Test func limitsShowSetResetAndRejectBadInput() async throws {
        let sandbox = Sandbox()
        let initial = try await sandbox.run("transport", "limits")
        #expect(initial.status == 0)
        let rows = initial.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
        #expect(rows.contains("direct 45 s 30 s default"), "\(initial.stdout)")
        #expect(rows.contains("obfs4 120 s 90 s default"))
        #expect(rows.contains("snowflake 300 s 120 s default"))

        let set = try await sandbox.run("transport", "limits", "set", "Snowflake", "90/45")
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout.contains("snowflake: ceiling 90 s, moves on after 45 s without progress"))
        let file = sandbox.directory.appendingPathComponent("connection-assist.json")
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let shown = try JSONSerialization.jsonObject(with: Data(try await sandbox.run("transport", "limits", "--json").stdout.utf8)) as? [[String: Any]]
        let snowflake = shown?.first { $0["kind"] as? String == "snowflake" }
        #expect(snowflake?["ceilingSeconds"] as? Double == 90)
        #expect(snowflake?["noProgressSeconds"] as? Double == 45)
        #expect(snowflake?["source"] as? String == "setting")

        for bad in [["set", "direct", "45"], ["set", "direct", "0/3"], ["set", "not-a-name!", "4/3"], ["set", "direct"]] {
            let result = try await sandbox.run(["transport", "limits"] + bad)
            #expect(result.status == 64, "\(bad): \(result.stdout) \(result.stderr)")
        }
        let unchanged = try String(contentsOf: file, encoding: .utf8)
        #expect(unchanged.contains(#""snowflake" : "90/45""#), "a bad command changes nothing: \(unchanged)")

        #expect(try await sandbox.run("transport", "limits", "reset").status == 0)
        #expect(try await sandbox.run("transport", "limits").stdout.contains("setting") == false)
    }

    @Test func runRejectsBadAssistOptionsBeforeStartingTor() async throws {
        let sandbox = Sandbox()
        for arguments in [["--route-timeout", "direct"], ["--route-timeout", "direct=5"], ["--route-timeout", "bad name=5/4"],
                          ["--builtin-bridges", "/nonexistent/builtins.txt"], ["--assist-strategy", "fastest"]] {
            let result = try await sandbox.run(["run", "--transport", "auto", "--socks", "39349"] + arguments)
            #expect(result.status == 64, "\(arguments): \(result.stdout) \(result.stderr)")
            #expect(!result.stdout.contains("trying"), "no route was tried")
        }
        let badLines = try sandbox.write("obfs4 192.0.2.1:443 not-a-fingerprint cert=x\n", named: "builtins.txt")
        let result = try await sandbox.run(["run", "--transport", "auto", "--socks", "39349", "--builtin-bridges", badLines.path])
        #expect(result.status == 64)
        #expect(result.stderr.contains("line 1"), "\(result.stderr)")
        #expect(!result.stderr.contains("192.0.2.1"), "the bad line's address is not echoed")
    }
}
