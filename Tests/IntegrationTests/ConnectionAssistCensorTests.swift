import PosternTestSupport
import Foundation
import Testing

/// Issue 22, acceptance: connection assist under the test bed's `fet` censor (a fully-encrypted
/// traffic detector modelled on Wu et al., USENIX Security 2023; docs/TESTBED.md) at P = 100 %,
/// with `--bridge` lines only (no direct route). It names the protocol block on obfs4 and goes
/// around it.
extension TestBedSuite {
    /// `scripts/testbed censor SCENARIO ARGUMENTS...` (e.g. `fet --probability 100 --seed 1`).
    private func switchCensor(_ bed: TestBed, _ scenario: String, _ arguments: [String]) throws {
        let result = try ProcessRunner.runBlocking(TestBed.script, ["censor", scenario] + arguments + ["--dir", bed.directory])
        #expect(result.status == 0, "censor \(scenario): \(result.stderr)")
    }

    private static func run(_ bed: TestBed, config: URL, socks: UInt16, transport: String, bridges: [String]) throws -> RunningPostern {
        try RunningPostern(["run", "--config-dir", config.path, "--socks", "\(socks)", "--transport", transport,
                            "--tor-options-file", bed["TB_CLIENT_TORRC"]] + bridges.flatMap { ["--bridge", $0] },
                           environment: ["SSL_CERT_FILE": bed["TB_WEBTUNNEL_CA"]])
    }

    private static func seconds(since start: ContinuousClock.Instant) -> Double {
        let (seconds, attoseconds) = (ContinuousClock.now - start).components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// `postern status --json` of the run with this config directory.
    private static func status(_ config: URL) throws -> [String: Any] {
        let result = try ProcessRunner.runBlocking(ProcessRunner.postern, ["status", "--json", "--config-dir", config.path])
        return (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]) ?? [:]
    }

    private static func diagnoses(_ status: [String: Any]) -> [[String: Any]] {
        (status["assist"] as? [String: Any])?["diagnoses"] as? [[String: Any]] ?? []
    }

    /// Polls `postern status` until a diagnosis of `routeKey` appears (or `seconds` pass).
    private static func awaitDiagnosis(_ config: URL, routeKey: String, seconds: Double) async throws -> [String: Any]? {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if let found = diagnoses(try status(config)).first(where: { $0["routeKey"] as? String == routeKey }) { return found }
            try await Task.sleep(for: .milliseconds(250))
        }
        return nil
    }

    @Test func fetFullProtocolBlockGoesAroundObfs4AndNamesIt() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try #require(!bed["TB_BRIDGE_SNOWFLAKE"].isEmpty, "the test bed's snowflake stack is not up")
        try switchCensor(bed, "fet", ["--probability", "100", "--seed", "1"])
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("assist-fet-100")
        defer { try? FileManager.default.removeItem(at: config) }

        let started = ContinuousClock.now
        let run = try Self.run(bed, config: config, socks: 39351, transport: "auto",
                               bridges: [bed["TB_BRIDGE_OBFS4"], bed["TB_BRIDGE_SNOWFLAKE"], bed["TB_BRIDGE_WEBTUNNEL"]])
        defer { run.terminate() }
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:39351", timeout: 150)
        let seconds = Self.seconds(since: started)
        try #require(ready != nil, "output: \(run.output)")
        #expect(ready?.contains("obfs4") == false, "ready via a non-obfs4 route: \(ready ?? "")")
        // The protocol block is named in the status (the diagnosis may follow ready by its 3 s confirm connect).
        let diagnosis = try await Self.awaitDiagnosis(config, routeKey: "obfs4:command line", seconds: 10)
        let finalStatus = try Self.status(config)
        #expect(diagnosis?["technique"] as? String == "protocol-block", "status: \(finalStatus); output: \(run.output)")
        #expect((diagnosis?["passes"] as? [String])?.contains("obfs4") == false)
        #expect(run.output.contains("diagnosis bridges (obfs4, command line): "), "output: \(run.output)")
        #expect(run.output.contains("most likely a block of the obfs4 protocol"), "output: \(run.output)")
        #expect(run.interruptAndWait() == 0)
        for secret in TestBed.bridgeSecrets(bed["TB_BRIDGE_OBFS4"]) {
            #expect(!run.output.contains(secret), "bridge data in the output")
        }

        // The oracle: the route it got ready on, alone, under the same censor.
        let route = ready?.contains("webtunnel") == true ? "webtunnel" : "snowflake"
        let oracleConfig = TestBed.temporaryDirectory("assist-fet-100-oracle")
        defer { try? FileManager.default.removeItem(at: oracleConfig) }
        let oracleStart = ContinuousClock.now
        let oracle = try Self.run(bed, config: oracleConfig, socks: 39352, transport: route,
                                  bridges: [bed[route == "webtunnel" ? "TB_BRIDGE_WEBTUNNEL" : "TB_BRIDGE_SNOWFLAKE"]])
        defer { oracle.terminate() }
        let oracleReady = try await oracle.waitForLine(containing: "ready: socks5 127.0.0.1:39352", timeout: 120)
        let oracleSeconds = Self.seconds(since: oracleStart)
        try #require(oracleReady != nil, "the oracle (\(route) alone): \(oracle.output)")
        _ = oracle.interruptAndWait()
        print("connection assist under fet P=100: ready in \(seconds) s via \(route); \(route) alone \(oracleSeconds) s")
        #expect(seconds <= oracleSeconds + 5, "assist \(seconds) s, \(route) alone \(oracleSeconds) s: \(run.output)")
    }

    @Test func fetFullProtocolBlockVerdictOnObfs4WithinFifteenSeconds() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try switchCensor(bed, "fet", ["--probability", "100", "--seed", "2"])
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("assist-fet-100-vanilla")
        defer { try? FileManager.default.removeItem(at: config) }

        let started = ContinuousClock.now
        let run = try Self.run(bed, config: config, socks: 39353, transport: "auto",
                               bridges: [bed["TB_BRIDGE_OBFS4"], bed["TB_BRIDGE_VANILLA"]])
        defer { run.terminate() }
        let line = try await run.waitForLine(containing: "diagnosis bridges (obfs4, command line): ", timeout: 15)
        let seconds = Self.seconds(since: started)
        print("connection assist under fet P=100, obfs4 + vanilla: obfs4 diagnosed after \(seconds) s")
        try #require(line != nil, "no diagnosis of obfs4 within 15 s: \(run.output)")
        #expect(line?.contains("then the address went silent: most likely a block of the obfs4 protocol") == true, "\(line ?? "")")
        #expect(line?.contains("would pass: ") == true && line?.contains("vanilla") == true, "\(line ?? "")")
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:39353", timeout: 90)
        #expect(ready?.contains("vanilla") == true, "output: \(run.output)")
        #expect(run.interruptAndWait() == 0)
        // The footprint: at most 2 connections (SYNs, caught or not) to the obfs4 bridge's ip:port
        // in the whole run, as the censor counts them: the flow it caught and one SYN-only confirm
        // connect; tor's redials into the block and a second probe are held back by Postern's gate.
        let stats = try bed.censorStats()
        let obfs4 = stats.peers.first { $0.name == "bridge-obfs4" }
        print("fet P=100, obfs4 + vanilla: \(obfs4?.connections ?? 0) connection(s) to the obfs4 bridge, \(obfs4?.blocked ?? 0) blocked")
        #expect(obfs4 != nil && obfs4!.connections >= 1, "censor-stats counted no connection to the obfs4 bridge")
        // Tor's dial (caught) and the assistant's confirm connect: the route being applied is not
        // probed (its transport is in-process, tor's dial is the evidence), and the gate holds the
        // address while the confirm waits and for 200 s after it found the address silent.
        #expect((obfs4?.connections ?? 0) <= 2, "\(obfs4?.connections ?? 0) connections to the obfs4 bridge: \(run.output)")
    }

    /// Issue 22, acceptance: `fet` at its measured rate (P = 26 %, Wu et al.), 10 runs with obfs4 +
    /// snowflake + webtunnel bridges: ready in every run, the median within the oracle's time + 5 s.
    /// Each run starts from a fresh censor (`testbed censor fet` restarts the judge and empties its
    /// blocked ip:ports: an earlier run's caught flow must not block this one) with its own seed,
    /// and a fresh state directory (no route memory from the run before). A run ends at ready, to
    /// keep the suite's time (about 60 s for the 10 runs and the oracle on an idle machine).
    @Test func fetAtTheMeasuredRateIsReadyInEveryRun() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try #require(!bed["TB_BRIDGE_SNOWFLAKE"].isEmpty, "the test bed's snowflake stack is not up")
        defer { try? bed.setCensor("none") }
        let bridges = [bed["TB_BRIDGE_OBFS4"], bed["TB_BRIDGE_SNOWFLAKE"], bed["TB_BRIDGE_WEBTUNNEL"]]
        var times: [Double] = []
        var lines: [String] = []
        for index in 0..<10 {
            try switchCensor(bed, "fet", ["--probability", "26", "--seed", "\(index + 1)"])
            let config = TestBed.temporaryDirectory("assist-fet-26-\(index)")
            defer { try? FileManager.default.removeItem(at: config) }
            let port = UInt16(39380 + index)
            let started = ContinuousClock.now
            let run = try Self.run(bed, config: config, socks: port, transport: "auto", bridges: bridges)
            defer { run.terminate() }
            let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:\(port)", timeout: 60)
            let seconds = Self.seconds(since: started)
            _ = run.interruptAndWait()
            let route = ["obfs4", "snowflake", "webtunnel"].first { ready?.contains($0) == true } ?? "none"
            lines.append("run \(index + 1) (seed \(index + 1)): " + (ready == nil ? "NOT READY after \(seconds) s" : "ready in \(seconds) s via \(route)"))
            #expect(ready != nil, "run \(index + 1) not ready within 60 s: \(run.output)")
            if ready != nil { times.append(seconds) }
        }
        // The oracle knows which route passes: snowflake or webtunnel alone (the censor never
        // touches their TLS/DTLS first packets), each from a fresh censor; the faster one.
        var oracle = Double.infinity
        for (offset, route) in ["snowflake", "webtunnel"].enumerated() {
            try switchCensor(bed, "fet", ["--probability", "26", "--seed", "\(20 + offset)"])
            let config = TestBed.temporaryDirectory("assist-fet-26-oracle-\(route)")
            defer { try? FileManager.default.removeItem(at: config) }
            let port = UInt16(39392 + offset)
            let started = ContinuousClock.now
            let run = try Self.run(bed, config: config, socks: port, transport: route,
                                   bridges: [bed[route == "webtunnel" ? "TB_BRIDGE_WEBTUNNEL" : "TB_BRIDGE_SNOWFLAKE"]])
            defer { run.terminate() }
            let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:\(port)", timeout: 60)
            let seconds = Self.seconds(since: started)
            _ = run.interruptAndWait()
            lines.append("oracle \(route) alone: " + (ready == nil ? "NOT READY after \(seconds) s" : "ready in \(seconds) s"))
            if ready != nil { oracle = min(oracle, seconds) }
        }
        let sorted = times.sorted()
        let median = sorted.isEmpty ? .infinity : (sorted[(sorted.count - 1) / 2] + sorted[sorted.count / 2]) / 2
        print("connection assist under fet P=26, 10 runs:\n  " + lines.joined(separator: "\n  ")
              + "\n  median \(median) s, oracle \(oracle) s")
        #expect(times.count == 10, "\(lines)")
        try #require(oracle.isFinite, "no oracle: \(lines)")
        #expect(median <= oracle + 5, "median \(median) s, oracle \(oracle) s: \(lines)")
    }

    /// Issue 22 item 3: a definitive error ends a fixed route at once. Without the bed's CA the
    /// webtunnel certificate is not trusted; `postern run --transport webtunnel` (what an A/B
    /// trial's child runs) says so and exits with status 1 in seconds, not after tor's window.
    @Test func anUntrustedCertificateEndsAFixedRunAtOnce() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("none")
        let config = TestBed.temporaryDirectory("fixed-untrusted")
        defer { try? FileManager.default.removeItem(at: config) }
        let empty = config.appendingPathComponent("empty.pem")
        try "".write(to: empty, atomically: true, encoding: .utf8)
        let events = config.appendingPathComponent("events.jsonl")
        let started = ContinuousClock.now
        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "39354", "--transport", "webtunnel",
                                      "--bridge", bed["TB_BRIDGE_WEBTUNNEL"], "--tor-options-file", bed["TB_CLIENT_TORRC"],
                                      "--events-json", events.path],
                                     environment: ["SSL_CERT_FILE": empty.path, "SSL_CERT_DIR": config.path])
        defer { run.terminate() }
        let line = try await run.waitForLine(containing: "certificate was not trusted", timeout: 30)
        try #require(line != nil, "output: \(run.output)")
        #expect(line?.contains("(a censor in the middle, or a wrong pin)") == true, "\(line ?? "")")
        // It exits on its own, at once.
        for _ in 0..<40 where run.isRunning { try await Task.sleep(for: .milliseconds(250)) }
        let seconds = Self.seconds(since: started)
        print("fixed webtunnel run with an untrusted certificate: ended after \(seconds) s")
        #expect(!run.isRunning, "still running after \(seconds) s: \(run.output)")
        if !run.isRunning { #expect(run.terminationStatus == 1, "output: \(run.output)") }
        let log = (try? String(contentsOf: events, encoding: .utf8)) ?? ""
        #expect(log.contains("\"route-cannot-work\""), "events: \(log)")
    }
}
