import PosternRuntime
import Foundation
import TrialAnalysis

/// Everything one `postern ab` run found: kept as `result.json` in its directory under
/// `<state dir>/ab/`, printed by `--json`, listed by `postern ab history`.
struct ABResult: Codable, Sendable {
    struct Milestone: Codable, Sendable, Equatable {
        var progress: Int
        var tag: String
        /// Seconds since the child's run began (its events file's `t`).
        var seconds: Double
    }

    struct Failure: Codable, Sendable, Equatable {
        /// "start", "bootstrap" or "probe".
        var stage: String
        /// The last bootstrap milestone reached.
        var progress: Int?
        var tag: String?
        var reason: String
    }

    struct Trial: Codable, Sendable {
        /// Position in the schedule, from 1.
        var index: Int
        var route: String
        /// The n-th trial of its route, from 1.
        var attempt: Int
        /// Started with a cached consensus from an earlier trial of the same route.
        var warm: Bool
        var succeeded: Bool
        var firstByteSeconds: Double?
        var bootstrapSeconds: Double?
        var milestones: [Milestone]
        var probeFirstByteSeconds: Double?
        var probeBytes: Int?
        var throughputBytesPerSecond: Double?
        var failure: Failure?
        /// The child's events file, relative to the run's directory.
        var eventsFile: String
        var socksPort: UInt16
        var startedAt: Date
    }

    /// Median and 90th percentile of one figure over a route's trials that produced it.
    struct Figure: Codable, Sendable, Equatable {
        var count: Int
        var median: Double?
        var p90: Double?

        init(_ values: [Double]) {
            count = values.count
            median = Statistics.median(values)
            p90 = Statistics.quantile(values, 0.9)
        }
    }

    struct RouteSummary: Codable, Sendable {
        var route: String
        var trials: Int
        var successes: Int
        var successRate: Double
        var firstByte: Figure
        var bootstrap: Figure
        var probeFirstByte: Figure
        var throughput: Figure
        /// The most common place failed trials stopped, e.g. "5% conn: Connection timed out".
        var commonFailure: String?
    }

    struct Comparison: Codable, Sendable {
        var figure: String
        var first: String
        var second: String
        var firstMedian: Double
        var secondMedian: Double
        var mannWhitneyU: Double?
        var p: Double?
        /// 95 % percentile-bootstrap interval of median(first) − median(second).
        var medianDifference: Double
        var differenceLower: Double?
        var differenceUpper: Double?
        var significant: Bool
    }

    var id: String
    var startedAt: Date
    var finishedAt: Date
    var routes: [String]
    var trialsPerRoute: Int
    var parallel: Int
    var order: String
    var seed: UInt64
    var warm: Bool
    var probeURL: String?
    var probeBytes: Int
    var directory: String
    var trials: [Trial]
    var summaries: [RouteSummary]
    var comparisons: [Comparison]
    var verdict: [String]

    static let significanceLevel = 0.05

    /// Fills `summaries`, `comparisons` and `verdict` from `trials`.
    mutating func analyse() {
        summaries = routes.map { route in
            let mine = trials.filter { $0.route == route }
            let ok = mine.filter(\.succeeded)
            let failures = mine.compactMap(\.failure).map { failure -> String in
                var place = failure.stage
                if let progress = failure.progress { place = "\(progress)% (\(failure.tag ?? "?"))" }
                return "\(place): \(failure.reason)"
            }
            let common = Dictionary(grouping: failures, by: { $0 }).max { $0.value.count < $1.value.count }?.key
            return RouteSummary(route: route, trials: mine.count, successes: ok.count,
                                successRate: mine.isEmpty ? 0 : Double(ok.count) / Double(mine.count),
                                firstByte: Figure(mine.compactMap(\.firstByteSeconds)),
                                bootstrap: Figure(ok.compactMap(\.bootstrapSeconds)),
                                probeFirstByte: Figure(ok.compactMap(\.probeFirstByteSeconds)),
                                throughput: Figure(ok.compactMap(\.throughputBytesPerSecond)),
                                commonFailure: common)
        }
        comparisons = []
        for (i, first) in routes.enumerated() {
            for second in routes[(i + 1)...] {
                for (figure, values) in [("bootstrap", \Trial.bootstrapSeconds), ("probe first byte", \Trial.probeFirstByteSeconds),
                                         ("throughput", \Trial.throughputBytesPerSecond)] {
                    let a = trials.filter { $0.route == first && $0.succeeded }.compactMap { $0[keyPath: values] }
                    let b = trials.filter { $0.route == second && $0.succeeded }.compactMap { $0[keyPath: values] }
                    guard a.count >= 2, b.count >= 2 else { continue }
                    let test = Statistics.mannWhitneyU(a, b)
                    let interval = Statistics.bootstrapMedianDifference(a, b, seed: seed &+ UInt64(comparisons.count))
                    comparisons.append(Comparison(figure: figure, first: first, second: second,
                                                  firstMedian: Statistics.median(a)!, secondMedian: Statistics.median(b)!,
                                                  mannWhitneyU: test?.u, p: test?.p,
                                                  medianDifference: Statistics.median(a)! - Statistics.median(b)!,
                                                  differenceLower: interval?.lower, differenceUpper: interval?.upper,
                                                  significant: (test?.p ?? 1) < Self.significanceLevel))
                }
            }
        }
        verdict = makeVerdict()
    }

    private func makeVerdict() -> [String] {
        var lines: [String] = []
        for summary in summaries {
            if summary.successes == 0 {
                var line = "\(summary.route) never got through (0 of \(summary.trials))"
                if let common = summary.commonFailure { line += "; typically stopped at \(common)" }
                lines.append(line + ".")
            } else {
                var line = "\(summary.route) got through in \(summary.successes) of \(summary.trials) trials"
                if let median = summary.bootstrap.median { line += ", median \(Self.seconds(median)) to 100%" }
                lines.append(line + ".")
            }
        }
        let working = summaries.filter { $0.successes > 0 }
        if let best = working.max(by: { lhs, rhs in
            if lhs.successRate != rhs.successRate { return lhs.successRate < rhs.successRate }
            return (lhs.bootstrap.median ?? .infinity) > (rhs.bootstrap.median ?? .infinity)
        }) {
            let tied = working.filter { $0.successRate == best.successRate }.count > 1
            lines.append("Best here: \(best.route)" + (tied ? " (as reliable as the next best, with the lowest median time to 100%)." : " (the most reliable)."))
        } else if !summaries.isEmpty {
            lines.append("No route got through: try other bridges or transports.")
        }
        for comparison in comparisons where comparison.figure == "bootstrap" {
            let faster = comparison.medianDifference < 0 ? comparison.first : comparison.second
            var line = "\(comparison.first) vs \(comparison.second), time to 100%: medians \(Self.seconds(comparison.firstMedian)) vs \(Self.seconds(comparison.secondMedian))"
            line += " (difference \(Self.signed(comparison.medianDifference))"
            if let lower = comparison.differenceLower, let upper = comparison.differenceUpper {
                line += ", 95% CI \(Self.signed(lower)) to \(Self.signed(upper))"
            }
            if let p = comparison.p { line += "; Mann-Whitney p = \(Self.pValue(p))" }
            line += ")"
            line += comparison.significant
                ? ": \(faster) is faster, and the difference is unlikely to be chance."
                : ": no clear difference; it may be chance (more trials would tell)."
            lines.append(line)
        }
        return lines
    }

    static func seconds(_ value: Double) -> String { String(format: "%.2f s", value) }
    static func signed(_ value: Double) -> String { String(format: "%+.2f s", value) }
    static func pValue(_ p: Double) -> String { p < 0.001 ? "< 0.001" : String(format: "%.3f", p) }

    static func encoder(pretty: Bool = true) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    static func decode(_ data: Data) throws -> ABResult {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(ABResult.self, from: data)
    }

    // MARK: Renderings

    static let csvHeader = ["index", "route", "attempt", "warm", "succeeded", "first_byte_s", "bootstrap_s",
                            "probe_first_byte_s", "probe_bytes", "throughput_bytes_per_s", "failure_stage",
                            "failure_progress", "failure_tag", "failure_reason", "events_file"]

    var csv: String {
        func number(_ value: Double?) -> String { value.map { String(format: "%.6f", $0) } ?? "" }
        return CSV.render(header: Self.csvHeader, rows: trials.map { trial in
            [String(trial.index), trial.route, String(trial.attempt), String(trial.warm), String(trial.succeeded),
             number(trial.firstByteSeconds), number(trial.bootstrapSeconds), number(trial.probeFirstByteSeconds),
             trial.probeBytes.map(String.init) ?? "", number(trial.throughputBytesPerSecond), trial.failure?.stage ?? "",
             trial.failure?.progress.map(String.init) ?? "", trial.failure?.tag ?? "", trial.failure?.reason ?? "",
             trial.eventsFile]
        })
    }

    var svg: String {
        BoxPlotSVG.render(title: "Time to 100% bootstrap by route (\(trialsPerRoute) trials each)", axisLabel: "seconds",
                          groups: summaries.map { summary in
                              BoxPlotSVG.Group(label: summary.route,
                                               values: trials.filter { $0.route == summary.route && $0.succeeded }.compactMap(\.bootstrapSeconds),
                                               note: "\(summary.successes)/\(summary.trials) ok")
                          })
    }

    /// The per-route table with a sparkline of time to 100% in trial order (· = failed), all routes
    /// on one scale.
    var table: String {
        func pair(_ figure: Figure, scale: Double = 1, digits: Int = 2) -> String {
            guard let median = figure.median, let p90 = figure.p90 else { return "-" }
            return String(format: "%.\(digits)f / %.\(digits)f", median / scale, p90 / scale)
        }
        let allTimes = trials.compactMap(\.bootstrapSeconds)
        let rows = summaries.map { summary -> [String] in
            let series = trials.filter { $0.route == summary.route }.map { $0.succeeded ? $0.bootstrapSeconds : nil }
            return [summary.route, "\(summary.successes)/\(summary.trials)", String(format: "%.0f%%", summary.successRate * 100),
                    pair(summary.firstByte), pair(summary.bootstrap), pair(summary.probeFirstByte),
                    pair(summary.throughput, scale: 1_048_576), Sparkline.render(series, minimum: allTimes.min(), maximum: allTimes.max())]
        }
        return Table.render(header: ["ROUTE", "OK", "RATE", "FIRST BYTE s (med/p90)", "100% s (med/p90)", "PROBE TTFB s (med/p90)",
                                     "MiB/s (med/p90)", "100% BY TRIAL"], rows: rows)
    }
}
