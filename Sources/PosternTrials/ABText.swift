import Foundation
import PosternSystem
import TrialAnalysis

/// Plain-text forms of the results (`postern ab` prints them; an app may show or log them). The
/// data, JSON, CSV, SVG and HTML forms are in ABResult, MergedRuns and ABReport.
extension ABResult {
    /// The columns every per-route table starts with.
    static let textHeader = ["ROUTE", "OK", "RATE", "BROKE AFTER 100%", "HARNESS ERR", "FIRST BYTE s (med/p90)", "100% s (med/p90)",
                             "PROBE TTFB s (med/p90)", "MiB/s (med/p90)"]

    /// The per-route table with a sparkline of time to 100% in trial order (· = no 100%), all
    /// routes on one scale; then the harness errors, apart.
    public var textTable: String {
        let allTimes = trials.compactMap(\.bootstrapSeconds)
        let rows = summaries.map { summary -> [String] in
            let series = trials.filter { $0.route == summary.route }.map(\.bootstrapSeconds)
            return summary.textRow + [Sparkline.render(series, minimum: allTimes.min(), maximum: allTimes.max())]
        }
        var text = PlainText.table(header: Self.textHeader + ["100% BY TRIAL"], rows: rows)
        if !harnessErrors.isEmpty {
            text += "\n\nharness errors (not the routes' doing; counted for no route):\n"
            text += PlainText.table(header: ["TRIAL", "ROUTE", "TRY", "CODE", "THEN", "WHAT HAPPENED"], rows: harnessErrors.map { error in
                [String(error.trial), error.route, String(error.attemptTry), error.code.rawValue, error.retried ? "retried" : "given up",
                 error.message]
            })
        }
        return text
    }

    /// What a finished run shows: the table, a blank line, the verdict, a blank line and where its
    /// report, charts and raw trials are.
    public var textReport: String {
        ([textTable, ""] + verdict
         + ["", "report: \(directory)/report.html; charts: \(directory)/charts.svg; raw trials: \(directory)/trials.csv"])
            .joined(separator: "\n")
    }
}

extension ABResult.RouteSummary {
    /// One route's cells under ``ABResult/textHeader``: counts, rates and median / 90th percentile pairs.
    var textRow: [String] {
        [route, "\(successes)/\(trials)", String(format: "%.0f%%", successRate * 100), "\(failedAfterBootstrap)/\(reachedBootstrap)",
         String(harnessErrors), firstByte.textPair(), bootstrap.textPair(), probeFirstByte.textPair(),
         throughput.textPair(scale: 1_048_576)]
    }
}

extension ABResult.Figure {
    /// "median / p90" with two decimals after dividing by `scale`; "-" without values.
    func textPair(scale: Double = 1) -> String {
        guard let median, let p90 else { return "-" }
        return String(format: "%.2f / %.2f", median / scale, p90 / scale)
    }
}

extension MergedRuns {
    /// One row per route and network, then the pooled rows.
    public var textTable: String {
        var rows: [[String]] = []
        for network in networks {
            rows += network.summaries.map { [network.label] + $0.textRow }
        }
        rows += pooled.map { ["pooled"] + $0.textRow }
        return PlainText.table(header: ["NETWORK"] + ABResult.textHeader, rows: rows)
    }

    /// The table, a blank line and the verdict.
    public var textReport: String { ([textTable, ""] + verdict).joined(separator: "\n") }
}

extension TrialHistory {
    /// A saved run as `postern ab history --json` lists it.
    public struct Entry: Encodable, Sendable, Equatable {
        public let id: String
        public let startedAt: Date
        public let routes: [String]
        public let trialsPerRoute: Int
        /// Route → trials that got through.
        public let successes: [String: Int]
        public let verdict: [String]
        public let directory: String

        /// The entry of a saved `run`.
        public init(_ run: ABResult) {
            id = run.id
            startedAt = run.startedAt
            routes = run.routes
            trialsPerRoute = run.trialsPerRoute
            // A saved run is read from disk as it is: a route listed twice must not trap.
            successes = Dictionary(run.summaries.map { ($0.route, $0.successes) }, uniquingKeysWith: { first, _ in first })
            verdict = run.verdict
            directory = run.directory
        }
    }

    /// The runs as a table: id, start (ISO 8601), trials per route, successes per route, best route.
    public static func textTable(_ runs: [ABResult]) -> String {
        let formatter = ISO8601DateFormatter()
        return PlainText.table(header: ["ID", "STARTED", "TRIALS", "RESULTS", "BEST"], rows: runs.map { run in
            [run.id, formatter.string(from: run.startedAt), String(run.trialsPerRoute),
             run.summaries.map { "\($0.route) \($0.successes)/\($0.trials)" }.joined(separator: ", "), run.best ?? "-"]
        })
    }
}
