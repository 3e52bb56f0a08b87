import PosternTestSupport
import Foundation
import Testing

/// Issue 22, acceptance for the test bed's `freeze` censor (Russia's TSPU as reported in
/// net4people/bbs#490: flows to datacentre addresses go silent after 16 KiB from the server; the
/// snowflake proxies, residential, are spared; docs/TESTBED.md): connection assist gets ready via
/// snowflake within the oracle's time + 10 s and names the freeze on the obfs4 or vanilla route;
/// `bridges test --deep` names the freeze for the obfs4 bridge and passes snowflake.
extension TestBedSuite {
    private static func seconds(since start: ContinuousClock.Instant) -> Double {
        let (seconds, attoseconds) = (ContinuousClock.now - start).components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    private static func freezeRun(_ bed: TestBed, config: URL, socks: UInt16, transport: String, bridges: [String]) throws -> RunningPostern {
        try RunningPostern(["run", "--config-dir", config.path, "--socks", "\(socks)", "--transport", transport,
                            "--tor-options-file", bed["TB_CLIENT_TORRC"]] + bridges.flatMap { ["--bridge", $0] })
    }

    /// The assist's diagnoses in `postern status --json` of the run with this config directory.
    private static func freezeDiagnoses(_ config: URL) throws -> [[String: Any]] {
        let result = try ProcessRunner.runBlocking(ProcessRunner.postern, ["status", "--json", "--config-dir", config.path])
        let status = (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]) ?? [:]
        return (status["assist"] as? [String: Any])?["diagnoses"] as? [[String: Any]] ?? []
    }

    @Test func freezeAssistReadyViaSnowflakeAndNamesTheFreeze() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try #require(!bed["TB_BRIDGE_SNOWFLAKE"].isEmpty, "the test bed's snowflake stack is not up")
        try bed.setCensor("freeze")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("assist-freeze")
        defer { try? FileManager.default.removeItem(at: config) }

        let started = ContinuousClock.now
        let run = try Self.freezeRun(bed, config: config, socks: 39361, transport: "auto",
                                     bridges: [bed["TB_BRIDGE_OBFS4"], bed["TB_BRIDGE_VANILLA"], bed["TB_BRIDGE_SNOWFLAKE"]])
        defer { run.terminate() }
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:39361", timeout: 90)
        let seconds = Self.seconds(since: started)
        try #require(ready != nil, "output: \(run.output)")
        #expect(ready?.contains("snowflake") == true, "ready via snowflake: \(ready ?? "")")
        // The freeze is named on the route that met it (the diagnosis is read while the routes are tried).
        var freeze: [String: Any]?
        for _ in 0..<20 {
            freeze = try Self.freezeDiagnoses(config).first { $0["technique"] as? String == "freeze" }
            if freeze != nil { break }
            try await Task.sleep(for: .milliseconds(250))
        }
        let key = freeze?["routeKey"] as? String ?? ""
        #expect(key.hasPrefix("obfs4:") || key.hasPrefix("vanilla:"), "a freeze on obfs4 or vanilla: \(freeze ?? [:]); output: \(run.output)")
        #expect((freeze?["passes"] as? [String])?.contains("snowflake") == true, "\(freeze ?? [:])")
        #expect(run.output.contains("data stopped after ~"), "output: \(run.output)")
        #expect(run.interruptAndWait() == 0)
        for secret in TestBed.bridgeSecrets(bed["TB_BRIDGE_OBFS4"]) + TestBed.bridgeSecrets(bed["TB_BRIDGE_VANILLA"]) {
            #expect(!run.output.contains(secret), "bridge data in the output")
        }

        // The oracle: snowflake alone, under the same censor.
        let oracleConfig = TestBed.temporaryDirectory("assist-freeze-oracle")
        defer { try? FileManager.default.removeItem(at: oracleConfig) }
        let oracleStart = ContinuousClock.now
        let oracle = try Self.freezeRun(bed, config: oracleConfig, socks: 39362, transport: "snowflake", bridges: [bed["TB_BRIDGE_SNOWFLAKE"]])
        defer { oracle.terminate() }
        let oracleReady = try await oracle.waitForLine(containing: "ready: socks5 127.0.0.1:39362", timeout: 60)
        let oracleSeconds = Self.seconds(since: oracleStart)
        try #require(oracleReady != nil, "the oracle (snowflake alone): \(oracle.output)")
        _ = oracle.interruptAndWait()
        print("connection assist under freeze: ready in \(seconds) s via snowflake; snowflake alone \(oracleSeconds) s; diagnosis \(freeze ?? [:])")
        #expect(seconds <= oracleSeconds + 10, "assist \(seconds) s, snowflake alone \(oracleSeconds) s: \(run.output)")
    }

    @Test func freezeDeepBridgesTestNamesTheFreezeAndPassesSnowflake() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try #require(!bed["TB_BRIDGE_SNOWFLAKE"].isEmpty, "the test bed's snowflake stack is not up")
        try bed.setCensor("freeze")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("deep-freeze")
        defer { try? FileManager.default.removeItem(at: config) }
        let add = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "add", "--config-dir", config.path,
                                                                      bed["TB_BRIDGE_OBFS4"], bed["TB_BRIDGE_SNOWFLAKE"]])
        try #require(add.status == 0, "bridges add: \(add.stdout) \(add.stderr)")

        let started = ContinuousClock.now
        let run = try await ProcessRunner.run(ProcessRunner.postern, [
            "bridges", "test", "--json", "--deep", "--deep-url", bed["TB_BLOB_URL"], "--deep-bytes", "262144", "--deep-timeout", "45",
            "--tor-options-file", bed["TB_CLIENT_TORRC"], "--config-dir", config.path])
        let seconds = Self.seconds(since: started)
        print("bridges test --deep under freeze: \(seconds) s\n\(run.stdout)")
        #expect(run.status == 1, "the frozen bridge makes the exit status 1: \(run.stderr)")
        #expect(seconds < 60, "within the deep deadline")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout) \(run.stderr)")
        let results = try #require(report["bridges"] as? [[String: Any]])
        let obfs4 = try #require(results.first { $0["transport"] as? String == "obfs4" })
        let snowflake = try #require(results.first { $0["transport"] as? String == "snowflake" })
        let obfs4Transfer = obfs4["transfer"] as? [String: Any] ?? [:]
        #expect(obfs4Transfer["verdict"] as? String == "froze", "\(obfs4)")
        #expect((obfs4["reason"] as? String)?.contains("froze after ~") == true, "\(obfs4)")
        #expect((obfs4["reason"] as? String)?.contains("data stopped while the connection stayed open") == true, "\(obfs4)")
        // Where data stopped: above the handshakes, at or below the censor's 16 KiB (the relay
        // counts TCP payload; the censor counts IP bytes, headers included).
        let frozeAt = obfs4Transfer["frozeAfterBytes"] as? Int ?? 0
        #expect(frozeAt > 2048 && frozeAt <= 16384, "froze after \(frozeAt) bytes")
        let snowflakeTransfer = snowflake["transfer"] as? [String: Any] ?? [:]
        #expect(snowflakeTransfer["verdict"] as? String == "passed", "\(snowflake)")
        #expect(snowflakeTransfer["downloadedBytes"] as? Int == 262144, "\(snowflake)")
        #expect((snowflakeTransfer["kilobitsPerSecond"] as? Int ?? 0) > 0, "\(snowflake)")
        #expect(snowflake["alive"] as? Bool == true)
        for secret in TestBed.bridgeSecrets(bed["TB_BRIDGE_OBFS4"]) + TestBed.bridgeSecrets(bed["TB_BRIDGE_SNOWFLAKE"]) {
            #expect(!run.stdout.contains(secret) && !run.stderr.contains(secret), "bridge data in the output")
        }
    }
}
