import PosternTestSupport
import Foundation
import Testing

/// Issue #22 item 4, "a small footprint": under the bed's `burst` censor (more than K = 3 new
/// connections per second to one ip:port block it; scripts/testbed-censors), `postern run
/// --transport auto` with several bridges pasted gets to ready and the censor counts 0 blocked
/// connections: tor's dials, connection assist's probes and their retries all stay under the
/// trigger (TransportBase's EndpointGate; AssistProbes' one-after-another probes). The counts per
/// bridge ip:port (`testbed censor-stats`) are printed, the censor's view of Postern's footprint.
extension TestBedSuite {
    @Test func burstCensorCountsNoBlockedConnectionDuringConnectionAssist() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        var bridges = [bed["TB_BRIDGE_OBFS4"], bed["TB_BRIDGE_VANILLA"]]
        if let snowflake = bed.values["TB_BRIDGE_SNOWFLAKE"], !snowflake.isEmpty { bridges.append(snowflake) }
        try bed.setCensor("burst", options: ["--connections", "3", "--block-seconds", "60"])
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("burst-footprint")
        defer { try? FileManager.default.removeItem(at: config) }

        let started = ContinuousClock.now
        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "39891", "--transport", "auto",
                                      "--tor-options-file", bed["TB_CLIENT_TORRC"]] + bridges.flatMap { ["--bridge", $0] })
        defer { run.terminate() }
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:39891", timeout: 150)
        let stats = try bed.censorStats()
        // By the bed's names only: the addresses are the bridges' (scripts/check-leaks.py fails the run on them).
        let counts = stats.peers.map { "\($0.name.isEmpty ? "an unnamed bed address" : $0.name): \($0.connections) connection(s), \($0.blocked) blocked" }
        print("burst K=3, postern run --transport auto with \(bridges.count) bridges: ready in \(ContinuousClock.now - started); censor-stats: \(counts.joined(separator: "; "))")
        try #require(ready != nil, "output: \(run.output)")
        #expect(run.interruptAndWait() == 0)
        // The censor saw the run (a count of 0 everywhere would be a test that cannot fail) ...
        #expect(stats.peers.contains { $0.connections > 0 }, "censor-stats counted no connection: \(counts)")
        // ... and blocked none of its connections.
        #expect(stats.blocked == 0, "the burst censor blocked \(stats.blocked) connection(s): \(counts)\noutput: \(run.output)")
        for peer in stats.peers { #expect(peer.blocked == 0, "\(peer.name.isEmpty ? "an unnamed bed address" : peer.name): \(peer.blocked) blocked") }

        // The censor was live all along: four connects at once to the vanilla bridge trip it, and
        // censor-stats counts the blocked ones (so the 0 above is Postern's restraint).
        let burst = try ProcessRunner.runBlocking(URL(fileURLWithPath: "/usr/bin/python3"),
                                                  [ProcessRunner.packageRoot.appendingPathComponent("scripts/testbed-censor.py").path,
                                                   "connect-burst", bed["TB_VANILLA_ADDR"], bed["TB_VANILLA_PORT"], "4", "2"])
        #expect(burst.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "ok ok ok timeout", "connect-burst: \(burst.stdout) \(burst.stderr)")
        let after = try bed.censorStats()
        #expect(after.blocked >= 1, "the burst censor blocked nothing after 4 connects at once")
        print("burst K=3: 4 connects at once to the vanilla bridge afterwards: \(burst.stdout.trimmingCharacters(in: .whitespacesAndNewlines)); censor-stats blocked \(after.blocked)")
    }
}
