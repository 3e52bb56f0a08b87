import Foundation
import TrialAnalysis

extension ABResult {
    /// Fills `summaries`, `comparisons`, `best` and `verdict` from `trials`. Harness errors count
    /// for nothing here: they are not the route's.
    public mutating func analyse() {
        summaries = routes.map { route in
            Self.summary(route: route, trials: trials.filter { $0.route == route },
                         harnessErrors: harnessErrors.filter { $0.route == route }.count)
        }
        comparisons = Self.compare(routes: routes, trials: trials, seed: seed)
        let choice = Self.choose(summaries, comparisons: comparisons)
        best = choice.best
        verdict = makeVerdict(choice)
    }

    static func summary(route: String, trials mine: [Trial], harnessErrors: Int) -> RouteSummary {
        let ok = mine.filter(\.succeeded)
        let failures = mine.compactMap(\.failure).map(\.placeAndReason)
        let common = Dictionary(grouping: failures, by: { $0 }).max { lhs, rhs in
            lhs.value.count != rhs.value.count ? lhs.value.count < rhs.value.count : lhs.key > rhs.key
        }?.key
        return RouteSummary(route: route, trials: mine.count, successes: ok.count,
                            reachedBootstrap: mine.filter(\.reachedBootstrap).count,
                            failedAfterBootstrap: mine.filter(\.failedAfterBootstrap).count, harnessErrors: harnessErrors,
                            firstByte: Figure(mine.compactMap(\.firstByteSeconds)),
                            bootstrap: Figure(mine.compactMap { FigureName.bootstrap.value(of: $0) }),
                            probeFirstByte: Figure(mine.compactMap { FigureName.probeFirstByte.value(of: $0) }),
                            throughput: Figure(mine.compactMap { FigureName.throughput.value(of: $0) }),
                            commonFailure: common)
    }

    /// Which route the verdict recommends, and why.
    public struct Choice: Sendable, Equatable {
        /// The recommended route; nil when none got through or equally reliable routes could not
        /// be told apart.
        public var best: String?
        /// The routes that got through most often (one, or several tied).
        public var mostReliable: [String]
        /// For a best among tied routes: the figure on which it beat each of the others.
        public var decidedBy: FigureName?
    }

    /// The most reliable route that got through. Among equally reliable ones, one that is better
    /// than each of the others on a figure (time to 100 %, then throughput, then probe first byte)
    /// with a difference unlikely to be chance, and worse than none on any; otherwise no best: a
    /// difference of medians that may be chance must not pick a route.
    static func choose(_ summaries: [RouteSummary], comparisons: [Comparison]) -> Choice {
        let working = summaries.filter { $0.successes > 0 }
        guard let top = working.map(\.successRate).max() else { return Choice(best: nil, mostReliable: [], decidedBy: nil) }
        let tied = working.filter { $0.successRate == top }.map(\.route)
        guard tied.count > 1 else { return Choice(best: tied.first, mostReliable: tied, decidedBy: nil) }
        let among = comparisons.filter { tied.contains($0.first) && tied.contains($0.second) && $0.meaningful }
        for candidate in tied {
            let others = tied.filter { $0 != candidate }
            let mine = among.filter { $0.first == candidate || $0.second == candidate }
            guard !mine.contains(where: { $0.better != candidate }) else { continue }
            for figure in [FigureName.bootstrap, .throughput, .probeFirstByte] {
                let beaten = Set(mine.filter { $0.figure == figure && $0.better == candidate }.map { $0.first == candidate ? $0.second : $0.first })
                if beaten == Set(others) { return Choice(best: candidate, mostReliable: tied, decidedBy: figure) }
            }
        }
        return Choice(best: nil, mostReliable: tied, decidedBy: nil)
    }

    private func makeVerdict(_ choice: Choice) -> [String] {
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
            if summary.failedAfterBootstrap > 0 {
                lines.append("\(summary.route): \(summary.failedAfterBootstrap) of \(summary.reachedBootstrap) trials that reached 100% then broke on the download (failures after bootstrap).")
            }
        }
        if let best = choice.best {
            if let figure = choice.decidedBy {
                let others = choice.mostReliable.filter { $0 != best }.joined(separator: ", ")
                let what = figure == .bootstrap ? "faster to 100%" : figure == .throughput ? "faster downloads" : "a faster first byte"
                lines.append("Best here: \(best) (as reliable as \(others), and \(what), by a margin unlikely to be chance).")
            } else {
                lines.append("Best here: \(best) (the most reliable).")
            }
        } else if choice.mostReliable.count > 1 {
            lines.append("No clear best: \(Self.list(choice.mostReliable)) got through equally often, and no figure tells them apart by a margin that is both beyond chance and large enough to matter (at least \(Self.percent(Self.meaningfulRelativeDifference))).")
        } else if !summaries.isEmpty {
            lines.append("No route got through: try other bridges or transports.")
        }
        for comparison in comparisons {
            lines.append(Self.sentence(comparison))
        }
        if !harnessErrors.isEmpty {
            let givenUp = harnessErrors.filter { !$0.retried }.count
            var line = "\(harnessErrors.count) tr\(harnessErrors.count == 1 ? "y" : "ies") failed for reasons of the harness, not the route"
            line += givenUp > 0 ? " (\(givenUp) trial\(givenUp == 1 ? "" : "s") given up)" : " (all retried)"
            lines.append(line + "; they count for no route.")
        }
        return lines
    }

    static func list(_ names: [String]) -> String {
        names.count <= 1 ? names.joined() : names.dropLast().joined(separator: ", ") + " and " + names.last!
    }

    static func sentence(_ comparison: Comparison) -> String {
        let figure = comparison.figure
        let what = figure == .bootstrap ? "time to 100%" : figure == .probeFirstByte ? "probe first byte" : "throughput"
        let render: (Double) -> String = figure == .throughput ? { mebibytes($0) } : { seconds($0) }
        let renderDifference: (Double) -> String = figure == .throughput ? { String(format: "%+.2f MiB/s", $0 / 1_048_576) } : { signed($0) }
        var line = "\(comparison.first) vs \(comparison.second), \(what): medians \(render(comparison.firstMedian)) vs \(render(comparison.secondMedian))"
        line += " (difference \(renderDifference(comparison.medianDifference))"
        if let lower = comparison.differenceLower, let upper = comparison.differenceUpper {
            line += ", 95% CI \(renderDifference(lower)) to \(renderDifference(upper))"
        }
        if let p = comparison.p { line += "; Mann-Whitney p = \(pValue(p))" }
        line += ")"
        let better = figure == .throughput ? "faster downloads" : "faster"
        if comparison.meaningful {
            line += ": \(comparison.better) is \(better), and the difference is unlikely to be chance."
        } else if comparison.significant {
            let size = comparison.relativeDifference.map { " (\(percent($0)))" } ?? ""
            let margin = abs(comparison.medianDifference)
            let by = figure == .throughput ? String(format: "%.2f MiB/s", margin / 1_048_576) : seconds(margin)
            let threshold = figure == .throughput ? percent(meaningfulRelativeDifference)
                : "\(percent(meaningfulRelativeDifference)) and \(seconds(meaningfulSeconds))"
            line += ": no clear difference; \(comparison.better) was ahead by \(by)\(size),"
            line += " unlikely to be chance but too small to matter (a difference counts from \(threshold))."
        } else {
            line += ": no clear difference; it may be chance (more trials would tell)."
        }
        return line
    }

    // MARK: Numbers in text

    public static func percent(_ fraction: Double) -> String { String(format: "%.0f %%", fraction * 100) }

    public static func seconds(_ value: Double) -> String { String(format: "%.2f s", value) }
    public static func signed(_ value: Double) -> String { String(format: "%+.2f s", value) }
    public static func mebibytes(_ value: Double) -> String { String(format: "%.2f MiB/s", value / 1_048_576) }
    public static func pValue(_ p: Double) -> String { p < 0.001 ? "< 0.001" : String(format: "%.3f", p) }
}
