import Foundation
import Testing
@testable import PosternTrials

/// The plain-text forms of results that `postern ab`, `ab report`, `ab merge` and `ab history`
/// print, checked cell by cell on hand-made results.
@Suite struct TextFormTests {
    static let header = "ROUTE      OK   RATE  BROKE AFTER 100%  HARNESS ERR  FIRST BYTE s (med/p90)  100% s (med/p90)  PROBE TTFB s (med/p90)"
        + "  MiB/s (med/p90)  100% BY TRIAL"

    @Test func tableHasARowPerRouteAndTheHarnessErrorsApart() throws {
        let result = Fixtures.threeRoutes(harnessErrors: [Fixtures.harnessError(trial: 1, route: "obfs4", try: 1, retried: true),
                                                          Fixtures.harnessError(trial: 3, route: "direct", try: 3, retried: false)])
        let lines = result.textTable.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.count == 9, "\(lines)")
        #expect(lines[0] == Self.header)
        let obfs4 = try #require(lines.first { $0.hasPrefix("obfs4 ") })
        #expect(obfs4.hasPrefix("obfs4      5/5  100%  0/5               1            0.30 / 0.30             4.20 / "), "\(obfs4)")
        let snowflake = try #require(lines.first { $0.hasPrefix("snowflake ") })
        #expect(snowflake.hasPrefix("snowflake  4/5  80%   1/5               0            0.30 / 0.30             9.80 / "), "\(snowflake)")
        // direct never reached 100%: no figures, and its sparkline is all "no 100%" marks.
        #expect(lines[3] == "direct     0/5  0%    0/0               1            -                       -                 -"
                + "                       -                ·····")
        #expect(lines[4] == "")
        #expect(lines[5] == "harness errors (not the routes' doing; counted for no route):")
        #expect(lines[6] == "TRIAL  ROUTE   TRY  CODE                 THEN      WHAT HAPPENED")
        #expect(lines[7] == "1      obfs4   1    child-configuration  retried   127.0.0.1:40001 is already in use by another program")
        #expect(lines[8] == "3      direct  3    child-configuration  given up  127.0.0.1:40001 is already in use by another program")
    }

    @Test func tableWithoutHarnessErrorsHasNoSecondTable() {
        let text = Fixtures.threeRoutes().textTable
        #expect(text.split(separator: "\n").count == 4)
        #expect(!text.contains("harness errors"))
    }

    /// One scale for all routes: the fastest 100% of the run is the lowest bar, the slowest the highest.
    @Test func sparklinesShareOneScale() throws {
        let lines = Fixtures.threeRoutes().textTable.split(separator: "\n")
        let obfs4 = try #require(lines.first { $0.hasPrefix("obfs4 ") }).split(separator: " ").last.map(String.init)
        let snowflake = try #require(lines.first { $0.hasPrefix("snowflake ") }).split(separator: " ").last.map(String.init)
        #expect(obfs4?.first == "▁")
        #expect(snowflake?.count == 5)
        #expect(snowflake?.contains("█") == true)
        #expect(obfs4?.contains("█") == false)
    }

    @Test func reportIsTableVerdictAndWhereTheFilesAre() {
        let result = Fixtures.threeRoutes()
        let expected = [result.textTable, ""] + result.verdict
            + ["", "report: /tmp/ab/20261201T100000Z-1/report.html; charts: /tmp/ab/20261201T100000Z-1/charts.svg; "
                + "raw trials: /tmp/ab/20261201T100000Z-1/trials.csv"]
        #expect(result.textReport == expected.joined(separator: "\n"))
        #expect(result.verdict.contains { $0.contains("Best here: obfs4") }, "\(result.verdict)")
    }

    @Test func mergedTableHasRowsPerNetworkThenPooled() throws {
        let merged = MergedRuns.merge(MergeTests.results())
        let lines = merged.textTable.split(separator: "\n").map(String.init)
        #expect(lines.count == 1 + 3 * 3)
        #expect(lines[0].hasPrefix("NETWORK  ROUTE      OK     RATE  BROKE AFTER 100%  HARNESS ERR  "), "\(lines[0])")
        #expect(lines.dropFirst().map { String($0.prefix(7)) } == ["home   ", "home   ", "home   ", "mobile ", "mobile ", "mobile ",
                                                                   "pooled ", "pooled ", "pooled "])
        let pooledObfs4 = try #require(lines.first { $0.hasPrefix("pooled   obfs4") })
        #expect(pooledObfs4.hasPrefix("pooled   obfs4      10/15  67%   0/10              0            "), "\(pooledObfs4)")
        let homeSnowflake = try #require(lines.first { $0.hasPrefix("home     snowflake") })
        #expect(homeSnowflake.contains("8/10   80%   2/10              1   "), "\(homeSnowflake)")
        #expect(merged.textReport == ([merged.textTable, ""] + merged.verdict).joined(separator: "\n"))
    }

    @Test func historyTableAndEntry() throws {
        let first = Fixtures.threeRoutes(id: "20261201T100000Z-1")
        var second = Fixtures.threeRoutes(id: "20261201T110000Z-2")
        second.startedAt = Fixtures.start.addingTimeInterval(3600)
        second.best = nil
        let lines = TrialHistory.textTable([first, second]).split(separator: "\n").map(String.init)
        #expect(lines == [
            "ID                  STARTED               TRIALS  RESULTS                               BEST",
            "20261201T100000Z-1  2026-11-30T00:53:20Z  5       obfs4 5/5, snowflake 4/5, direct 0/5  obfs4",
            "20261201T110000Z-2  2026-11-30T01:53:20Z  5       obfs4 5/5, snowflake 4/5, direct 0/5  -",
        ])
        let entry = TrialHistory.Entry(first)
        #expect(entry.successes == ["obfs4": 5, "snowflake": 4, "direct": 0])
        #expect(entry.routes == ["obfs4", "snowflake", "direct"] && entry.trialsPerRoute == 5 && entry.directory == "/tmp/ab/20261201T100000Z-1")
        let json = try #require(try JSONSerialization.jsonObject(with: ABResult.encoder().encode([entry])) as? [[String: Any]])
        #expect(json.first.map { Set($0.keys) } == ["id", "startedAt", "routes", "trialsPerRoute", "successes", "verdict", "directory"])
        #expect(json.first?["startedAt"] as? String == "2026-11-30T00:53:20Z")
    }
}
