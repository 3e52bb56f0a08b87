import PosternTestSupport
import Foundation
import Testing

extension TestBed {
    /// Switches the running bed's link profile (scripts/testbed profile; `none` removes it).
    func setProfile(_ profile: String) throws {
        let result = try ProcessRunner.runBlocking(Self.script, ["profile", profile, "--dir", directory])
        #expect(result.status == 0, "profile \(profile): \(result.stderr)")
    }

    /// What `testbed check --link-only` wrote: one entry per measured path.
    func linkReport() throws -> [[String: Any]] {
        let data = try Data(contentsOf: URL(fileURLWithPath: directory).appendingPathComponent("link-check.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
    }

    /// `postern ab ROUTES --json` on this bed with its vanilla, obfs4 and snowflake bridges
    /// configured; the JSON it printed. The probe downloads `probeBytes` of the bed's blob after
    /// each bootstrap.
    func abTrial(routes: [String], trials: Int, probeBytes: Int, seed: Int) throws -> [String: Any] {
        let config = TestBed.temporaryDirectory("ab-truth")
        defer { try? FileManager.default.removeItem(at: config) }
        let add = try ProcessRunner.runBlocking(ProcessRunner.postern, ["bridges", "add", "--config-dir", config.path,
                                                                self["TB_BRIDGE_VANILLA"], self["TB_BRIDGE_OBFS4"],
                                                                self["TB_BRIDGE_SNOWFLAKE"]])
        try #require(add.status == 0, "bridges add: \(add.stdout) \(add.stderr)")
        let started = ContinuousClock.now
        let run = try ProcessRunner.runBlocking(ProcessRunner.postern, ["ab"] + routes + [
            "--trials", "\(trials)", "--parallel", "2", "--seed", "\(seed)", "--trial-timeout", "90",
            "--probe-url", self["TB_BLOB_URL"], "--probe-bytes", "\(probeBytes)",
            "--tor-options-file", self["TB_CLIENT_TORRC"], "--json", "--config-dir", config.path])
        print("postern ab \(routes.joined(separator: " ")) (\(trials) trials each) took \(ContinuousClock.now - started)\n\(run.stderr)")
        try #require(run.status == 0, "postern ab failed: \(run.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
    }
}

/// The comparison of `figure` between obfs4 and `other` in `postern ab --json` output.
private func comparison(_ json: [String: Any], _ figure: String, _ other: String = "snowflake") throws -> [String: Any] {
    let comparisons = json["comparisons"] as? [[String: Any]] ?? []
    return try #require(comparisons.first { $0["figure"] as? String == figure && $0["first"] as? String == "obfs4"
        && $0["second"] as? String == other }, "no \(figure) comparison in \(comparisons)")
}

private func successes(_ json: [String: Any], _ route: String) -> Int {
    let summaries = json["summaries"] as? [[String: Any]] ?? []
    return summaries.first { $0["route"] as? String == route }?["successes"] as? Int ?? 0
}

extension TestBedSuite {
    /// Issue 15: under `mobile` the link check measures what the profile says on the obfs4 bridge's
    /// path and on the WebRTC path, fails when judged against a profile that is not active, and
    /// `none` leaves no trace (no rules, no forwarder, nothing to check).
    @Test func linkProfileCheckMeasuresTheProfileAndFailsOnAWrongExpectation() throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try #require(bed["TB_SNOWFLAKE"] == "1", "the test bed's snowflake stack is not up")
        try bed.setProfile("mobile")
        defer { try? bed.setProfile("none") }

        let pass = try ProcessRunner.runBlocking(TestBed.script, ["check", "--link-only", "--dir", bed.directory, "--paths", "obfs4,webrtc"])
        print(pass.stdout)
        #expect(pass.status == 0, "link check under mobile:\n\(pass.stdout)\n\(pass.stderr)")
        let report = try bed.linkReport()
        #expect(report.compactMap { $0["path"] as? String } == ["obfs4", "webrtc"])
        for path in report {
            // The script judged these; that they are shaped at all is asserted here on its own.
            let rtt = path["rtt_ms"] as? Double ?? 0
            #expect(rtt > 120 && rtt < 180, "RTT of \(path["path"] ?? "?"): \(rtt) ms")
            let loss = path["loss"] as? Double ?? 0
            #expect(loss > 0.008 && loss < 0.012, "loss of \(path["path"] ?? "?"): \(loss)")
            let rate = path["rate_down_kbit"] as? Double ?? 0
            #expect(rate > 4000 && rate < 6000, "rate of \(path["path"] ?? "?"): \(rate) kbit/s")
            #expect((path["problems"] as? [String])?.isEmpty == true)
        }

        // Judged against `good` (30 ms, no loss, 20 Mbit/s), the same link must fail on each figure.
        let wrong = try ProcessRunner.runBlocking(TestBed.script, ["check", "--link-only", "--dir", bed.directory,
                                                           "--paths", "obfs4", "--expect", "good"])
        #expect(wrong.status == 1, "a wrong expectation must fail:\n\(wrong.stdout)\n\(wrong.stderr)")
        #expect(wrong.stdout.contains("FAIL obfs4"))
        let problems = try bed.linkReport().first?["problems"] as? [String] ?? []
        for figure in ["rtt_ms", "loss", "rate_down_kbit", "rate_up_kbit"] {
            #expect(problems.contains { $0.hasPrefix(figure + " ") }, "\(figure) not flagged: \(problems)")
        }

        try bed.setProfile("none")
        let none = try ProcessRunner.runBlocking(TestBed.script, ["check", "--link-only", "--dir", bed.directory])
        #expect(none.status == 64, "no profile active: nothing to check (\(none.stderr))")
        let tables = try ProcessRunner.runBlocking(URL(fileURLWithPath: "/usr/sbin/nft"), ["list", "tables"])
        #expect(tables.status == 0 && !tables.stdout.contains("postern_link"), "profile none leaves no rules: \(tables.stdout)")
        let status = try ProcessRunner.runBlocking(TestBed.script, ["status", "--dir", bed.directory])
        #expect(status.stdout.contains("link profile none") && !status.stdout.contains("  link "))
    }

    /// Issue 15, ground truth: with only the obfs4 bridge's path capped at 256 kbit/s, A/B must rank
    /// snowflake above obfs4 on throughput, and the difference must be significant.
    @Test func abRanksSnowflakeAboveThrottledObfs4OnThroughput() throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try #require(bed["TB_SNOWFLAKE"] == "1", "the test bed's snowflake stack is not up")
        try bed.setProfile("throttle-obfs4")
        defer { try? bed.setProfile("none") }
        // 128 KiB: about 5 s at the cap (tor's cells and TLS take their share of the 32 kB/s), long
        // enough that the cap and not the stream's start sets the rate.
        let json = try bed.abTrial(routes: ["obfs4", "snowflake"], trials: 5, probeBytes: 131_072, seed: 15)
        #expect(successes(json, "obfs4") >= 4 && successes(json, "snowflake") >= 4, "\(json["summaries"] ?? "")")
        let throughput = try comparison(json, "throughput")
        let obfs4 = throughput["firstMedian"] as? Double ?? 0, snowflake = throughput["secondMedian"] as? Double ?? 0
        #expect(snowflake > obfs4, "snowflake \(snowflake) B/s vs obfs4 \(obfs4) B/s")
        #expect(obfs4 < 40_000, "obfs4 is capped at 256 kbit/s (32 kB/s): \(obfs4) B/s")
        #expect(throughput["significant"] as? Bool == true && (throughput["p"] as? Double ?? 1) < 0.05, "\(throughput)")
    }

    /// Issue 15, ground truth: with 5 % loss on the WebRTC path only, A/B must rank obfs4 above
    /// snowflake on throughput, significantly.
    @Test func abRanksObfs4AboveLossySnowflakeOnThroughput() throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try #require(bed["TB_SNOWFLAKE"] == "1", "the test bed's snowflake stack is not up")
        try bed.setProfile("lossy-snowflake")
        defer { try? bed.setProfile("none") }
        // 256 KiB: about 5 s for snowflake at 5 % loss (~50 kB/s measured), 0.2 s for obfs4.
        let json = try bed.abTrial(routes: ["obfs4", "snowflake"], trials: 5, probeBytes: 262_144, seed: 16)
        #expect(successes(json, "obfs4") >= 4 && successes(json, "snowflake") >= 4, "\(json["summaries"] ?? "")")
        let throughput = try comparison(json, "throughput")
        let obfs4 = throughput["firstMedian"] as? Double ?? 0, snowflake = throughput["secondMedian"] as? Double ?? 0
        #expect(obfs4 > snowflake, "obfs4 \(obfs4) B/s vs snowflake \(snowflake) B/s")
        #expect(throughput["significant"] as? Bool == true && (throughput["p"] as? Double ?? 1) < 0.05, "\(throughput)")
    }

    /// Issue 15, ground truth: on a `good` link two bridge routes that differ only in their
    /// transport (obfs4 and the vanilla bridge, both TCP to a bridge on the same kind of path)
    /// take practically the same time to 100 %: A/B must say "no clear difference" for bootstrap.
    ///
    /// Practically, not exactly: tor never sets TCP_NODELAY, so on the vanilla bridge's connection
    /// (tor at both ends) a small write waits for the ACK of the one before, which the other end
    /// delays by 40 ms; obfs4proxy and our obfs4 set TCP_NODELAY. A capture shows five such
    /// stalls in a vanilla bootstrap, and vanilla was 0.04-0.08 s (1-3 %) behind obfs4 in every
    /// trial of a CI run, which five trials each can call unlikely to be chance (U = 0,
    /// p = 0.012). The verdict calls a difference clear only from 10 % and 0.1 s, and this one
    /// is far below that, so the assertion holds for that real difference too.
    ///
    /// Not obfs4 against snowflake: on this link snowflake's rendezvous (broker, STUN, ICE, DTLS,
    /// SCTP: about ten more round trips) really does cost about 0.7 s (medians 3.9 s and 4.7 s over
    /// 20 trials each here), which a five-trial A/B calls significant about one run in ten; a test
    /// asserting "no difference" there would assert something untrue (and 0.7 s of 3.9 s is a
    /// difference that matters). A false alarm here needs both p < 0.05 (at most 8/252 = 3.2 %
    /// of runs for a pair with no difference) and medians 10 % and 0.1 s apart: at 3.2 s with a
    /// spread of hundredths, no run of this pair has come close.
    @Test func abFindsNoClearBootstrapDifferenceOnAGoodLink() throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setProfile("good")
        defer { try? bed.setProfile("none") }
        let json = try bed.abTrial(routes: ["obfs4", "vanilla"], trials: 5, probeBytes: 65_536, seed: 17)
        #expect(successes(json, "obfs4") >= 4 && successes(json, "vanilla") >= 4, "\(json["summaries"] ?? "")")
        let bootstrap = try comparison(json, "bootstrap", "vanilla")
        #expect(bootstrap["meaningful"] as? Bool == false, "\(bootstrap)")
        let first = bootstrap["firstMedian"] as? Double ?? 0, second = bootstrap["secondMedian"] as? Double ?? 0
        #expect(abs(first - second) < 0.1 * min(first, second), "the two routes are within 10 % of each other: \(bootstrap)")
        let verdict = json["verdict"] as? [String] ?? []
        let line = verdict.first { $0.hasPrefix("obfs4 vs vanilla, time to 100%") } ?? ""
        #expect(line.contains(": no clear difference"), "\(verdict)")
    }
}
