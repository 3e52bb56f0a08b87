import Foundation
import Testing
@testable import PosternTrials

/// Analysis of a run: what counts for a route and what does not.
@Suite struct ResultTests {
    /// Harness errors are kept and shown, and change nothing about any route: rates, figures,
    /// comparisons and the verdict's lines about routes are those of the same trials without them.
    @Test func harnessErrorsNeverShapeTheVerdict() throws {
        let clean = Fixtures.threeRoutes()
        let errors = [Fixtures.harnessError(trial: 1, route: "obfs4", try: 1, retried: true),
                      Fixtures.harnessError(trial: 1, route: "obfs4", try: 2, retried: true),
                      Fixtures.harnessError(trial: 4, route: "obfs4", try: 1, retried: false)]
        let faulted = Fixtures.threeRoutes(harnessErrors: errors)
        #expect(faulted.best == clean.best && clean.best == "obfs4")
        for (a, b) in zip(clean.summaries, faulted.summaries) {
            #expect(a.successes == b.successes && a.trials == b.trials && a.successRate == b.successRate)
            #expect(a.bootstrap == b.bootstrap && a.throughput == b.throughput)
        }
        #expect(faulted.summaries.first { $0.route == "obfs4" }?.harnessErrors == 3)
        #expect(faulted.summaries.first { $0.route == "snowflake" }?.harnessErrors == 0)
        let extra = faulted.verdict.filter { !clean.verdict.contains($0) }
        #expect(extra == ["3 tries failed for reasons of the harness, not the route (1 trial given up); they count for no route."], "\(extra)")
        #expect(clean.verdict.allSatisfy { faulted.verdict.contains($0) })
        #expect(clean.comparisons.count == faulted.comparisons.count)
    }

    /// A download that breaks after 100 % is the route's failure, in its own category: the trial
    /// reached bootstrap (its time counts for time to 100 %) but is not a success.
    @Test func failuresAfterBootstrapAreTheirOwnCategory() throws {
        let result = Fixtures.threeRoutes()
        let snowflake = try #require(result.summaries.first { $0.route == "snowflake" })
        #expect(snowflake.trials == 5 && snowflake.successes == 4 && snowflake.reachedBootstrap == 5 && snowflake.failedAfterBootstrap == 1)
        #expect(snowflake.bootstrap.count == 5, "time to 100% counts every trial that got there")
        #expect(snowflake.throughput.count == 4, "throughput only from completed downloads")
        #expect(snowflake.commonFailure?.hasPrefix("after 100%: the probe download failed") == true, "\(snowflake.commonFailure ?? "")")
        #expect(result.verdict.contains("snowflake: 1 of 5 trials that reached 100% then broke on the download (failures after bootstrap)."))
        let direct = try #require(result.summaries.first { $0.route == "direct" })
        #expect(direct.successes == 0 && direct.reachedBootstrap == 0 && direct.failedAfterBootstrap == 0)
        #expect(result.verdict.contains("direct never got through (0 of 5); typically stopped at 10% (conn_done): no 100% within 20 s."))
        // Throughput: snowflake's downloads are faster (higher is better), and the test says so.
        let throughput = try #require(result.comparisons.first { $0.figure == .throughput && $0.first == "obfs4" && $0.second == "snowflake" })
        #expect(throughput.better == "snowflake" && throughput.significant)
        #expect(result.verdict.contains { $0.hasPrefix("obfs4 vs snowflake, throughput:") && $0.contains("snowflake is faster downloads") })
        let bootstrap = try #require(result.comparisons.first { $0.figure == .bootstrap && $0.first == "obfs4" && $0.second == "snowflake" })
        #expect(bootstrap.better == "obfs4" && bootstrap.significant)
    }

    /// The saved JSON round-trips, and results saved before these fields existed still load.
    @Test func resultsRoundTripAndOldOnesLoad() throws {
        let result = Fixtures.threeRoutes(harnessErrors: [Fixtures.harnessError(trial: 1, route: "obfs4", try: 1, retried: true)])
        let data = try ABResult.encoder().encode(result)
        let back = try ABResult.decode(data)
        #expect(back.harnessErrors == result.harnessErrors && back.best == "obfs4" && back.verdict == result.verdict)
        var old = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        old["harnessErrors"] = nil
        old["best"] = nil
        old["network"] = nil
        old["summaries"] = (old["summaries"] as? [[String: Any]])?.map { summary in
            summary.filter { !["reachedBootstrap", "failedAfterBootstrap", "harnessErrors"].contains($0.key) }
        }
        let oldResult = try ABResult.decode(try JSONSerialization.data(withJSONObject: old))
        #expect(oldResult.harnessErrors.isEmpty && oldResult.summaries.count == 3)
        #expect(throws: TrialError.self) { _ = try ABResult.decode(Data("{\"id\": 1}".utf8)) }
    }

    /// The charts are small multiples: one panel per figure, a box per route with data.
    @Test func chartsShowThreeFiguresSideBySide() throws {
        let svg = Fixtures.threeRoutes().svg
        for figure in ["bootstrap", "first-byte", "throughput"] { #expect(svg.contains("data-figure=\"\(figure)\"")) }
        #expect(svg.components(separatedBy: "class=\"panel\"").count - 1 == 3)
        #expect(svg.components(separatedBy: "class=\"box\"").count - 1 == 6, "obfs4 and snowflake in each panel")
        #expect(svg.components(separatedBy: ">no data<").count - 1 == 3, "direct in each panel")
        for label in ["Time to 100%", "Probe first byte", "Throughput", "MiB/s", "5/5 at 100%", "4/5 probes"] {
            #expect(svg.contains(label), "\(label)")
        }
    }

    /// Equally reliable routes: a best only when a figure tells it apart beyond chance (the issue's
    /// 3.05 s against 3.05 s, p = 0.90, must not name a best).
    @Test func aTieInReliabilityNeedsAFigureToPickABest() throws {
        func run(_ a: [Double], _ b: [Double]) -> ABResult {
            let trials = a.enumerated().map { Fixtures.trial($0.offset * 2 + 1, "obfs4", attempt: $0.offset + 1, bootstrap: $0.element) }
                + b.enumerated().map { Fixtures.trial($0.offset * 2 + 2, "snowflake", attempt: $0.offset + 1, bootstrap: $0.element) }
            return ABResult(id: "tie", startedAt: Fixtures.start, finishedAt: Fixtures.start, routes: ["obfs4", "snowflake"],
                            trialsPerRoute: a.count, parallel: 2, order: "interleaved", seed: 3, warm: false, probeURL: nil,
                            probeBytes: 0, directory: "/tmp/tie", trials: trials)
        }
        let same = run([3.05, 3.02, 3.08, 3.04, 3.07], [3.06, 3.03, 3.05, 3.09, 3.01])
        #expect(same.best == nil)
        #expect(same.verdict.contains("No clear best: obfs4 and snowflake got through equally often, and no figure tells them apart by a margin that is both beyond chance and large enough to matter (at least 10 %)."),
                "\(same.verdict)")
        let apart = run([3.1, 3.2, 3.0, 3.3, 3.15], [8.0, 7.5, 9.1, 8.4, 7.9])
        #expect(apart.best == "obfs4")
        #expect(apart.verdict.contains("Best here: obfs4 (as reliable as snowflake, and faster to 100%, by a margin unlikely to be chance)."), "\(apart.verdict)")
    }

    /// The test bed's `good` link, obfs4 against the vanilla bridge (the CI run that failed on
    /// it): every obfs4 trial 0.08 s ahead, p = 0.012. Real, and 2 % of 3.2 s: no best, and the
    /// sentence says both that it is unlikely to be chance and that it is too small to matter.
    @Test func aSignificantButTinyDifferenceIsNoClearDifference() throws {
        func run(_ a: [Double], _ b: [Double]) -> ABResult {
            let trials = a.enumerated().map { Fixtures.trial($0.offset * 2 + 1, "obfs4", attempt: $0.offset + 1, bootstrap: $0.element) }
                + b.enumerated().map { Fixtures.trial($0.offset * 2 + 2, "vanilla", attempt: $0.offset + 1, bootstrap: $0.element) }
            return ABResult(id: "tiny", startedAt: Fixtures.start, finishedAt: Fixtures.start, routes: ["obfs4", "vanilla"],
                            trialsPerRoute: a.count, parallel: 2, order: "interleaved", seed: 3, warm: false, probeURL: nil,
                            probeBytes: 0, directory: "/tmp/tiny", trials: trials)
        }
        let tiny = run([3.16, 3.15, 3.17, 3.16, 3.18], [3.24, 3.23, 3.26, 3.24, 3.25])
        let bootstrap = try #require(tiny.comparisons.first { $0.figure == .bootstrap })
        #expect(bootstrap.significant && !bootstrap.meaningful, "\(bootstrap)")
        #expect(tiny.best == nil)
        #expect(tiny.verdict.contains("obfs4 vs vanilla, time to 100%: medians 3.16 s vs 3.24 s (difference -0.08 s, 95% CI -0.10 s to -0.06 s; Mann-Whitney p = 0.012): no clear difference; obfs4 was ahead by 0.08 s (3 %), unlikely to be chance but too small to matter (a difference counts from 10 % and 0.10 s)."),
                "\(tiny.verdict)")
        // 10 % of the better median but under 0.10 s: still too small (first bytes of 0.5 s).
        #expect(!ABResult.Comparison.largeEnough(figure: .probeFirstByte, 0.50, 0.58))
        #expect(ABResult.Comparison.largeEnough(figure: .probeFirstByte, 0.50, 0.61))
        #expect(ABResult.Comparison.largeEnough(figure: .throughput, 1_000_000, 890_000))
        #expect(!ABResult.Comparison.largeEnough(figure: .throughput, 1_000_000, 910_000))
        // A result saved before `meaningful` existed gets it from its medians.
        var json = try #require(try JSONSerialization.jsonObject(with: try ABResult.encoder().encode(tiny)) as? [String: Any])
        json["comparisons"] = (json["comparisons"] as? [[String: Any]])?.map { $0.filter { $0.key != "meaningful" } }
        let old = try ABResult.decode(try JSONSerialization.data(withJSONObject: json))
        #expect(old.comparisons.map(\.meaningful) == tiny.comparisons.map(\.meaningful))
    }
}
