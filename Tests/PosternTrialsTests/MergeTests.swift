import Foundation
import PosternTestSupport
import Testing
@testable import PosternTrials

/// `postern ab merge`: runs from several networks in one table, per network and pooled.
@Suite struct MergeTests {
    /// Network "home" (obfs4 best) twice and network "mobile", where obfs4 is throttled out:
    /// per network the counts are that network's, pooled they are all the trials.
    static func results() -> [ABResult] {
        let home1 = Fixtures.threeRoutes(network: "home", id: "20261201T100000Z-a")
        let home2 = Fixtures.threeRoutes(network: "home", harnessErrors: [Fixtures.harnessError(trial: 2, route: "snowflake", try: 1, retried: true)],
                                         id: "20261201T110000Z-b")
        var mobileTrials = Fixtures.threeRoutes().trials
        for index in mobileTrials.indices where mobileTrials[index].route == "obfs4" {
            mobileTrials[index] = Fixtures.trial(mobileTrials[index].index, "obfs4", attempt: mobileTrials[index].attempt, bootstrap: nil)
        }
        let mobile = ABResult(id: "20261201T120000Z-c", startedAt: Fixtures.start, finishedAt: Fixtures.start, network: "mobile",
                              routes: ["obfs4", "snowflake", "direct"], trialsPerRoute: 5, parallel: 3, order: "interleaved", seed: 1,
                              warm: false, probeURL: nil, probeBytes: 1 << 20, directory: "/tmp/c", trials: mobileTrials)
        return [home1, home2, mobile]
    }

    @Test func poolsPerNetworkAndOverall() async throws {
        let merged = MergedRuns.merge(Self.results())
        #expect(merged.routes == ["obfs4", "snowflake", "direct"])
        #expect(merged.networks.map(\.label) == ["home", "mobile"])
        let home = try #require(merged.networks.first)
        #expect(home.runs == ["20261201T100000Z-a", "20261201T110000Z-b"] && home.harnessErrors == 1)
        #expect(home.summaries.first { $0.route == "obfs4" }?.trials == 10)
        #expect(home.best == "obfs4")
        let mobile = try #require(merged.networks.last)
        #expect(mobile.summaries.first { $0.route == "obfs4" }?.successes == 0)
        #expect(mobile.best == "snowflake")
        let pooledObfs4 = try #require(merged.pooled.first { $0.route == "obfs4" })
        #expect(pooledObfs4.trials == 15 && pooledObfs4.successes == 10)
        let pooledSnowflake = try #require(merged.pooled.first { $0.route == "snowflake" })
        #expect(pooledSnowflake.trials == 15 && pooledSnowflake.successes == 12 && pooledSnowflake.harnessErrors == 1)
        #expect(merged.pooledBest == "snowflake", "12/15 beats 10/15")
        #expect(merged.verdict.contains("home: best obfs4") && merged.verdict.contains("mobile: best snowflake"))
        #expect(merged.verdict.contains("Pooled over 2 networks: best snowflake (not in every network: see each one)."))
    }

    /// The command: saved runs by directory, a table with a row per network and route plus the
    /// pooled rows, and --json; a directory without a result is a clear failure.
    @Test func mergeAndReportCommandsReadSavedRuns() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("postern-merge-\(UUID())")
        defer { try? FileManager.default.removeItem(at: root) }
        var directories: [String] = []
        for result in Self.results() {
            let directory = root.appendingPathComponent(result.id)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try TrialHistory.writeAtomically(try ABResult.encoder().encode(result), to: directory.appendingPathComponent("result.json"))
            directories.append(directory.path)
        }
        let config = ["--config-dir", root.appendingPathComponent("config").path]
        let table = try await ProcessRunner.run(ProcessRunner.postern, ["ab", "merge"] + directories + config)
        #expect(table.status == 0, "\(table.stderr)")
        let rows = table.stdout.split(separator: "\n").map(String.init)
        #expect(rows.first?.hasPrefix("NETWORK") == true && rows.first?.contains("HARNESS ERR") == true)
        #expect(rows.filter { $0.hasPrefix("home ") }.count == 3 && rows.filter { $0.hasPrefix("mobile ") }.count == 3)
        #expect(rows.contains { $0.hasPrefix("pooled ") && $0.contains("obfs4") && $0.contains("10/15") })
        #expect(table.stdout.contains("Pooled over 2 networks: best snowflake"))
        let json = try await ProcessRunner.run(ProcessRunner.postern, ["ab", "merge", "--json"] + directories + config)
        #expect(json.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect((object["networks"] as? [[String: Any]])?.count == 2 && object["pooledBest"] as? String == "snowflake")

        let report = try await ProcessRunner.run(ProcessRunner.postern, ["ab", "report", directories[1]] + config)
        #expect(report.status == 0, "\(report.stderr)")
        #expect(report.stdout.contains("harness errors (not the routes' doing; counted for no route):"))
        let page = try String(contentsOf: URL(fileURLWithPath: directories[1]).appendingPathComponent("report.html"), encoding: .utf8)
        #expect(page.contains("<table class=\"harness\">") && page.contains("child-configuration"))

        let missing = try await ProcessRunner.run(ProcessRunner.postern, ["ab", "merge", root.path] + config)
        #expect(missing.status == 1 && missing.stderr.contains("holds no A/B result"), "\(missing.stderr)")
        let usage = try await ProcessRunner.run(ProcessRunner.postern, ["ab", "merge"] + config)
        #expect(usage.status == 64)
        let reportUsage = try await ProcessRunner.run(ProcessRunner.postern, ["ab", "report"] + config)
        #expect(reportUsage.status == 64)
    }

    /// A saved run is a file anyone can edit. Numbers as large as JSON's Double allows (a throughput
    /// of 1e300, times of ±1.7e308) once trapped `ab report` in its chart labels and its sparkline;
    /// every `ab` command that reads saved runs now finishes with them.
    @Test func savedRunsWithExtremeNumbersTrapNoAbCommand() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("postern-extreme-\(UUID())")
        defer { try? FileManager.default.removeItem(at: root) }
        let config = root.appendingPathComponent("config")
        var result = Fixtures.threeRoutes(id: "20261201T120000Z-x")
        let extremes: [(bootstrap: Double, throughput: Double)] = [(1.7e308, 1e300), (-1.7e308, 1.7e308), (.leastNonzeroMagnitude, 9.3e18)]
        // Trials 0, 1 and 3 succeeded (obfs4, snowflake, obfs4), so every figure takes the numbers.
        for (index, extreme) in zip([0, 1, 3], extremes) {
            result.trials[index].bootstrapSeconds = extreme.bootstrap
            result.trials[index].probeFirstByteSeconds = extreme.bootstrap
            result.trials[index].throughputBytesPerSecond = extreme.throughput
        }
        let directory = config.appendingPathComponent("state/ab/\(result.id)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try TrialHistory.writeAtomically(try ABResult.encoder().encode(result), to: directory.appendingPathComponent("result.json"))

        let options = ["--config-dir", config.path]
        for command in [["ab", "report", directory.path], ["ab", "report", result.id], ["ab", "history"], ["ab", "history", "--json"],
                        ["ab", "merge", directory.path], ["ab", "merge", "--json", directory.path]] {
            let run = try await ProcessRunner.run(ProcessRunner.postern, command + options)
            #expect(run.status == 0, "\(command.joined(separator: " ")): status \(run.status)\n\(run.stderr)")
        }
        let page = try String(contentsOf: directory.appendingPathComponent("report.html"), encoding: .utf8)
        #expect(page.contains("e+293</title>"), "the throughput chart labels 1e300 B/s in MiB/s")
    }
}
