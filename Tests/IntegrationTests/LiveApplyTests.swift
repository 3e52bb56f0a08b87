import PosternTestSupport
import BridgeConfig
import Foundation
import Testing

extension TestBedSuite {
    /// Issue 4's live apply: a run that starts with no bridges under block-tor stalls; adding the
    /// test bed's vanilla bridge to the store makes the same tor reach 100% without a restart.
    @Test(arguments: ["TB_BRIDGE_VANILLA", "TB_BRIDGE_OBFS4"])
    func storedBridgeAddedWhileRunningIsAppliedWithoutRestart(_ bridgeKey: String) async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("block-tor")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("live-apply")
        defer { try? FileManager.default.removeItem(at: config) }

        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "39066", "--stall-timeout", "6",
                                      "--tor-options-file", bed["TB_CLIENT_TORRC"]])
        defer { run.terminate() }
        let stalled = try await run.waitForLine(containing: "stalled:", timeout: 30)
        #expect(stalled != nil, "a direct run under block-tor must stall; output: \(run.output)")
        let pid = run.processIdentifier

        let add = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "add", "--config-dir", config.path,
                                                                bed[bridgeKey]])
        #expect(add.status == 0, "bridges add: \(add.stdout) \(add.stderr)")

        let applied = try await run.waitForLine(containing: "settings changed: now bridges", timeout: 10)
        #expect(applied != nil, "output: \(run.output)")
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:39066", timeout: 60)
        #expect(ready != nil, "output: \(run.output)")
        #expect(run.processIdentifier == pid && run.isRunning, "the same process, never restarted")
        let page = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:39066")
        #expect(page.stdout.contains(bed["TB_HTTP_MARKER"]), "curl: \(page.stderr)")
        #expect(run.interruptAndWait() == 0)
        // Nothing of the bridge reached the output.
        let torLog = (try? String(contentsOf: config.appendingPathComponent("state/tor/tor.log"), encoding: .utf8)) ?? ""
        for secret in TestBed.bridgeSecrets(bed[bridgeKey]) {
            #expect(!run.output.contains(secret), "bridge data leaked into the output: \(run.output)")
            #expect(!torLog.contains(secret), "bridge data leaked into tor.log")
        }
    }
}
