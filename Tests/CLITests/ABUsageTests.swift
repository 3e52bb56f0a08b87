import PosternTestSupport
import Foundation
import Testing

/// `postern ab` and `postern bridges test` as a user meets them before any network is touched:
/// help, usage errors (exit 64) and failures (exit 1). Nothing here starts tor or leaves loopback.
@Suite struct ABUsageTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-ab-usage-\(UUID())")

    private func postern(_ arguments: [String]) async throws -> ProcessResult {
        try await ProcessRunner.run(ProcessRunner.postern, arguments + ["--config-dir", directory.path])
    }

    @Test func abHelpNamesRoutesOptionsAndHistory() async throws {
        let result = try await postern(["ab", "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("Usage: postern ab [<command>] ROUTE ROUTE..."))
        #expect(result.stdout.contains("history"))
        for option in ["--trials N", "--parallel K", "--warm", "--probe-url URL", "--svg FILE", "--trial-timeout [ROUTE=]SECONDS",
                       "--ooni FILE", "--probe-asn ASN", "--probe-cc CC", "--network LABEL", "--harness-retries N", "report", "merge"] {
            #expect(result.stdout.contains(option), "help lacks \(option)")
        }
        let history = try await postern(["ab", "history", "--help"])
        #expect(history.status == 0 && history.stdout.contains("Usage: postern ab history"))
    }

    @Test(arguments: [["ab"], ["ab", "carrier-pigeon"], ["ab", "obfs4", "--trials", "0"], ["ab", "direct", "--order", "sideways"],
                      ["ab", "direct", "--probe-url", "https://example.invalid/"], ["ab", "direct", "--trial-timeout", "obfs4=3"],
                      ["ab", "direct", "--trial-timeout", "soon"], ["ab", "direct", "--json", "--csv"], ["ab", "direct", "direct"],
                      ["ab", "meek_lite"], ["ab", "direct", "--seed", "-1"], ["ab", "history", "extra"],
                      ["ab", "direct", "--probe-cc", "IR"], ["ab", "direct", "--ooni", "/dev/null", "--probe-asn", "ASx"],
                      ["ab", "direct", "--ooni", "/dev/null", "--probe-cc", "Iran"], ["ab", "direct", "--harness-retries", "11"],
                      ["ab", "direct", "--network", ""], ["ab", "report"], ["ab", "report", "a", "b"], ["ab", "merge"],
                      ["bridges", "test", "--parallel", "0"], ["bridges", "test", "--timeout", "x"], ["bridges", "test", "nothex"],
                      ["bridges", "test", "--builtin", "--all"]])
    func usageErrorsExit64(_ arguments: [String]) async throws {
        let result = try await postern(arguments)
        #expect(result.status == 64, "\(arguments): \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("postern"))
    }

    /// Built-in bridges of a transport this build lacks (meek_lite) get one note at the start,
    /// not a row per bridge; nothing is dialled.
    @Test func builtinBridgesOfAMissingTransportGetOneNote() async throws {
        let result = try await postern(["bridges", "test", "--builtin", "--transport", "meek_lite"])
        #expect(result.status == 1, "\(result.stderr)")
        let notes = result.stderr.split(separator: "\n").filter { $0.hasPrefix("note: ") }
        #expect(notes == ["note: 1 built-in meek_lite bridge not tested: this build has no meek_lite client"], "\(result.stderr)")
        #expect(result.stderr.contains("no bridges to test"))
        #expect(result.stdout.isEmpty)
    }

    /// webtunnel is a transport of this build now: `ab` takes it as a route name (its usage
    /// error is about the missing bridges, not an unavailable transport).
    @Test func webtunnelIsAvailable() async throws {
        let result = try await postern(["ab", "webtunnel", "--trials", "1"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("there are no webtunnel bridges to try"), "\(result.stderr)")
        #expect(!result.stderr.contains("not available in this build"), "\(result.stderr)")
    }

    @Test func emptyHistorySaysSo() async throws {
        let text = try await postern(["ab", "history"])
        #expect(text.status == 0 && text.stdout.contains("no A/B runs yet"))
        let json = try await postern(["ab", "history", "--json"])
        #expect(json.status == 0)
        #expect(json.stdout.filter { !$0.isWhitespace } == "[]")
    }

    @Test func bridgesTestWithoutBridgesFails() async throws {
        let result = try await postern(["bridges", "test"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("no bridges to test"))
    }

    /// A vanilla bridge on a loopback port nobody listens on: flagged as refused, exit 1, scrubbed.
    @Test func bridgesTestFlagsARefusedBridgeOnLoopback() async throws {
        // Held bound but not listening for the whole test: refused, and no other test's listener
        // can take the port meanwhile (run25: a port only closed before was taken, "alive").
        let refusing = try HeldLoopbackPort(listening: false)
        let port = refusing.port
        let line = "127.0.0.1:\(port) 0123456789ABCDEF0123456789ABCDEF01234567"
        let add = try await postern(["bridges", "add", line])
        try #require(add.status == 0, "\(add.stderr)")
        let result = try await postern(["bridges", "test", "--json"])
        #expect(result.status == 1)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let bridge = try #require((report["bridges"] as? [[String: Any]])?.first)
        #expect(bridge["alive"] as? Bool == false)
        // Worded as observed: a censor's refusal looks the same as a closed port (issue #22).
        #expect(bridge["reason"] as? String == "refused: the connection was refused (a closed port, or a censor)")
        #expect(!result.stdout.contains("nothing listens"))
        #expect(!result.stdout.contains("127.0.0.1:\(port)") && !result.stdout.contains("0123456789ABCDEF"))
        withExtendedLifetime(refusing) {}
    }
}
