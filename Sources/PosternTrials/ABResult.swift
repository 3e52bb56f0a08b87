import Foundation
import PosternSystem
import TrialAnalysis

/// Everything one `postern ab` run found: kept as `result.json` in its directory under
/// `<state dir>/ab/`, printed by `--json`, listed by `postern ab history`, read back by
/// `postern ab report` and `postern ab merge`.
///
/// Three kinds of trial end: the route got through (100 %, and the probe download completed when
/// there was one), the route failed (`failure.stage` says whether before 100 % or after it, when a
/// download through the route broke), or the harness failed (the child could not start, could not
/// bind, crashed): those are `harnessErrors`, retried, kept apart and never counted for or against
/// a route.
public struct ABResult: Codable, Sendable {
    public struct Milestone: Codable, Sendable, Equatable {
        public var progress: Int
        public var tag: String
        /// Seconds since the child's run began (its events file's `t`).
        public var seconds: Double
    }

    public struct Failure: Codable, Sendable, Equatable {
        /// Where the route failed.
        public struct Stage: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
            public let rawValue: String
            public init(rawValue: String) { self.rawValue = rawValue }
            public var description: String { rawValue }
            /// No 100 % (tor failed, stalled or the trial timed out).
            public static let bootstrap = Stage(rawValue: "bootstrap")
            /// 100 %, then the probe download through the route failed or broke.
            public static let afterBootstrap = Stage(rawValue: "after-bootstrap")
        }

        public var stage: Stage
        /// The last bootstrap milestone reached.
        public var progress: Int?
        public var tag: String?
        public var reason: String
        /// After bootstrap: what went wrong with the probe, and how many body bytes came first.
        public var probe: ProbeFetch.Failure.Kind?
        public var bodyBytes: Int?

        /// "5% (conn): reason", or "after 100%: reason".
        public var placeAndReason: String {
            if stage == .afterBootstrap { return "after 100%: \(reason)" }
            guard let progress else { return reason }
            return "\(progress)% (\(tag ?? "?")): \(reason)"
        }
    }

    public struct Trial: Codable, Sendable {
        /// Position in the schedule, from 1.
        public var index: Int
        public var route: String
        /// The n-th trial of its route, from 1.
        public var attempt: Int
        /// Started with a cached consensus from an earlier trial of the same route.
        public var warm: Bool
        /// 100 %, and the probe completed when there was one.
        public var succeeded: Bool
        public var firstByteSeconds: Double?
        /// Time to 100 % (set whenever the child got there, even when the probe failed after).
        public var bootstrapSeconds: Double?
        public var milestones: [Milestone]
        public var probeFirstByteSeconds: Double?
        public var probeBytes: Int?
        public var throughputBytesPerSecond: Double?
        public var failure: Failure?
        /// The child's events file, relative to the run's directory.
        public var eventsFile: String
        /// The SOCKS port the child bound and reported (nil when it never got ready).
        public var socksPort: UInt16?
        public var startedAt: Date
        /// Harness errors of earlier tries of this trial (retried before this one ran).
        public var harnessRetries: Int?

        public var reachedBootstrap: Bool { bootstrapSeconds != nil }
        public var failedAfterBootstrap: Bool { failure?.stage == .afterBootstrap }
    }

    /// A try of a trial that failed for a reason that is not the route's.
    public struct HarnessError: Codable, Sendable, Equatable {
        /// An open set of names, as every error code in Postern (PosternSystem's `ErrorCode`).
        public typealias Code = ErrorCode<HarnessError>

        /// The trial's position in the schedule.
        public var trial: Int
        public var route: String
        public var attempt: Int
        /// 1 for the first try of the trial, 2 for its first retry, ...
        public var attemptTry: Int
        public var code: Code
        public var message: String
        /// True when another try followed; false when the trial was given up (it then has no result).
        public var retried: Bool
    }

    /// Median and 90th percentile of one figure over a route's trials that produced it.
    public struct Figure: Codable, Sendable, Equatable {
        public var count: Int
        public var median: Double?
        public var p90: Double?

        public init(_ values: [Double]) {
            count = values.count
            median = Statistics.median(values)
            p90 = Statistics.quantile(values, 0.9)
        }
    }

    public struct RouteSummary: Codable, Sendable {
        public var route: String
        /// Trials with a result for the route (harness errors are not trials).
        public var trials: Int
        public var successes: Int
        public var successRate: Double
        /// Trials that reached 100 % (successes plus failures after bootstrap).
        public var reachedBootstrap: Int
        /// Trials that reached 100 % and then broke on the probe download.
        public var failedAfterBootstrap: Int
        /// Tries of this route's trials lost to the harness (not counted in `trials`).
        public var harnessErrors: Int
        public var firstByte: Figure
        public var bootstrap: Figure
        public var probeFirstByte: Figure
        public var throughput: Figure
        /// The most common place failed trials stopped, e.g. "5% (conn): Connection timed out".
        public var commonFailure: String?

        enum CodingKeys: String, CodingKey {
            case route, trials, successes, successRate, reachedBootstrap, failedAfterBootstrap, harnessErrors, firstByte, bootstrap,
                 probeFirstByte, throughput, commonFailure
        }

        public init(route: String, trials: Int, successes: Int, reachedBootstrap: Int, failedAfterBootstrap: Int, harnessErrors: Int,
                    firstByte: Figure, bootstrap: Figure, probeFirstByte: Figure, throughput: Figure, commonFailure: String?) {
            self.route = route
            self.trials = trials
            self.successes = successes
            successRate = trials == 0 ? 0 : Double(successes) / Double(trials)
            self.reachedBootstrap = reachedBootstrap
            self.failedAfterBootstrap = failedAfterBootstrap
            self.harnessErrors = harnessErrors
            self.firstByte = firstByte
            self.bootstrap = bootstrap
            self.probeFirstByte = probeFirstByte
            self.throughput = throughput
            self.commonFailure = commonFailure
        }

        /// Results saved before harness errors and failures after bootstrap were counted apart
        /// still load (those counts read as 0 / the successes).
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            route = try container.decode(String.self, forKey: .route)
            trials = try container.decode(Int.self, forKey: .trials)
            successes = try container.decode(Int.self, forKey: .successes)
            successRate = try container.decode(Double.self, forKey: .successRate)
            reachedBootstrap = try container.decodeIfPresent(Int.self, forKey: .reachedBootstrap) ?? successes
            failedAfterBootstrap = try container.decodeIfPresent(Int.self, forKey: .failedAfterBootstrap) ?? 0
            harnessErrors = try container.decodeIfPresent(Int.self, forKey: .harnessErrors) ?? 0
            firstByte = try container.decode(Figure.self, forKey: .firstByte)
            bootstrap = try container.decode(Figure.self, forKey: .bootstrap)
            probeFirstByte = try container.decode(Figure.self, forKey: .probeFirstByte)
            throughput = try container.decode(Figure.self, forKey: .throughput)
            commonFailure = try container.decodeIfPresent(String.self, forKey: .commonFailure)
        }
    }

    /// What a comparison compares. Lower is better for times, higher for throughput.
    public struct FigureName: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
        public static let bootstrap = FigureName(rawValue: "bootstrap")
        public static let probeFirstByte = FigureName(rawValue: "probe first byte")
        public static let throughput = FigureName(rawValue: "throughput")
        public static let all: [FigureName] = [.bootstrap, .probeFirstByte, .throughput]

        public var higherIsBetter: Bool { self == .throughput }
        /// The figure of one trial; times only from trials that got to 100 %, the probe's only
        /// from completed probes.
        public func value(of trial: Trial) -> Double? {
            switch self {
            case .bootstrap: trial.bootstrapSeconds
            case .probeFirstByte: trial.succeeded ? trial.probeFirstByteSeconds : nil
            case .throughput: trial.succeeded ? trial.throughputBytesPerSecond : nil
            default: nil
            }
        }
    }

    public struct Comparison: Codable, Sendable {
        public var figure: FigureName
        public var first: String
        public var second: String
        public var firstMedian: Double
        public var secondMedian: Double
        public var mannWhitneyU: Double?
        public var p: Double?
        /// 95 % percentile-bootstrap interval of median(first) − median(second).
        public var medianDifference: Double
        public var differenceLower: Double?
        public var differenceUpper: Double?
        /// p < `significanceLevel`: the difference is unlikely to be chance.
        public var significant: Bool
        /// Significant and large enough to matter to someone choosing a route: the medians differ
        /// by at least `meaningfulRelativeDifference` of the better one and, for times, by at
        /// least `meaningfulSeconds`. Only these pick a best route. With enough trials a test finds
        /// differences nobody would notice (tor's own TCP writes cost a vanilla bridge about 2 %
        /// of its time to 100 % against obfs4 on the test bed's `good` link, in every trial); a
        /// verdict must not send a user to another transport for those.
        public var meaningful: Bool

        public init(figure: FigureName, first: String, second: String, firstMedian: Double, secondMedian: Double,
                    mannWhitneyU: Double?, p: Double?, medianDifference: Double, differenceLower: Double?, differenceUpper: Double?,
                    significant: Bool) {
            self.figure = figure
            self.first = first
            self.second = second
            self.firstMedian = firstMedian
            self.secondMedian = secondMedian
            self.mannWhitneyU = mannWhitneyU
            self.p = p
            self.medianDifference = medianDifference
            self.differenceLower = differenceLower
            self.differenceUpper = differenceUpper
            self.significant = significant
            meaningful = significant && Self.largeEnough(figure: figure, firstMedian, secondMedian)
        }

        enum CodingKeys: String, CodingKey {
            case figure, first, second, firstMedian, secondMedian, mannWhitneyU, p, medianDifference, differenceLower, differenceUpper,
                 significant, meaningful
        }

        /// Results saved before `meaningful` existed get it from their own medians.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(figure: try container.decode(FigureName.self, forKey: .figure),
                      first: try container.decode(String.self, forKey: .first),
                      second: try container.decode(String.self, forKey: .second),
                      firstMedian: try container.decode(Double.self, forKey: .firstMedian),
                      secondMedian: try container.decode(Double.self, forKey: .secondMedian),
                      mannWhitneyU: try container.decodeIfPresent(Double.self, forKey: .mannWhitneyU),
                      p: try container.decodeIfPresent(Double.self, forKey: .p),
                      medianDifference: try container.decode(Double.self, forKey: .medianDifference),
                      differenceLower: try container.decodeIfPresent(Double.self, forKey: .differenceLower),
                      differenceUpper: try container.decodeIfPresent(Double.self, forKey: .differenceUpper),
                      significant: try container.decode(Bool.self, forKey: .significant))
        }

        static func largeEnough(figure: FigureName, _ a: Double, _ b: Double) -> Bool {
            let difference = abs(a - b)
            guard let relative = relative(figure: figure, a, b) else { return difference > 0 }
            return relative >= meaningfulRelativeDifference && (figure.higherIsBetter || difference >= meaningfulSeconds)
        }

        /// |a − b| over the better of the two (0.1 = 10 %); nil when the better one is 0.
        static func relative(figure: FigureName, _ a: Double, _ b: Double) -> Double? {
            let better = figure.higherIsBetter ? max(a, b) : min(a, b)
            return better > 0 ? abs(a - b) / better : nil
        }

        /// |difference| over the better median (0.1 = 10 %).
        public var relativeDifference: Double? { Self.relative(figure: figure, firstMedian, secondMedian) }

        /// The better of the two on this figure (by median; whether it is chance is `significant`).
        public var better: String {
            let firstBetter = figure.higherIsBetter ? firstMedian > secondMedian : firstMedian < secondMedian
            return firstBetter ? first : second
        }
    }

    public var id: String
    public var startedAt: Date
    public var finishedAt: Date
    /// A label for the network or vantage point the run was made from (`--network`), for merges.
    public var network: String?
    public var routes: [String]
    public var trialsPerRoute: Int
    public var parallel: Int
    public var order: String
    public var seed: UInt64
    public var warm: Bool
    public var probeURL: String?
    public var probeBytes: Int
    public var directory: String
    public var trials: [Trial]
    public var harnessErrors: [HarnessError]
    public var summaries: [RouteSummary]
    public var comparisons: [Comparison]
    /// The route the verdict recommends, if any got through.
    public var best: String?
    public var verdict: [String]

    public static let significanceLevel = 0.05
    /// The smallest difference of medians a verdict acts on, relative to the better median.
    public static let meaningfulRelativeDifference = 0.10
    /// And for times, the smallest in seconds: nobody chooses a transport for 50 ms of bootstrap.
    public static let meaningfulSeconds = 0.10

    public init(id: String, startedAt: Date, finishedAt: Date, network: String? = nil, routes: [String], trialsPerRoute: Int,
                parallel: Int, order: String, seed: UInt64, warm: Bool, probeURL: String?, probeBytes: Int, directory: String,
                trials: [Trial], harnessErrors: [HarnessError] = []) {
        self.id = id
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.network = network
        self.routes = routes
        self.trialsPerRoute = trialsPerRoute
        self.parallel = parallel
        self.order = order
        self.seed = seed
        self.warm = warm
        self.probeURL = probeURL
        self.probeBytes = probeBytes
        self.directory = directory
        self.trials = trials
        self.harnessErrors = harnessErrors
        summaries = []
        comparisons = []
        verdict = []
        analyse()
    }

    enum CodingKeys: String, CodingKey {
        case id, startedAt, finishedAt, network, routes, trialsPerRoute, parallel, order, seed, warm, probeURL, probeBytes, directory,
             trials, harnessErrors, summaries, comparisons, best, verdict
    }

    /// Reads results saved before harness errors were kept apart too (none then).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        startedAt = try container.decode(Date.self, forKey: .startedAt)
        finishedAt = try container.decode(Date.self, forKey: .finishedAt)
        network = try container.decodeIfPresent(String.self, forKey: .network)
        routes = try container.decode([String].self, forKey: .routes)
        trialsPerRoute = try container.decode(Int.self, forKey: .trialsPerRoute)
        parallel = try container.decode(Int.self, forKey: .parallel)
        order = try container.decode(String.self, forKey: .order)
        seed = try container.decode(UInt64.self, forKey: .seed)
        warm = try container.decode(Bool.self, forKey: .warm)
        probeURL = try container.decodeIfPresent(String.self, forKey: .probeURL)
        probeBytes = try container.decode(Int.self, forKey: .probeBytes)
        directory = try container.decode(String.self, forKey: .directory)
        trials = try container.decode([Trial].self, forKey: .trials)
        harnessErrors = try container.decodeIfPresent([HarnessError].self, forKey: .harnessErrors) ?? []
        summaries = try container.decode([RouteSummary].self, forKey: .summaries)
        comparisons = try container.decode([Comparison].self, forKey: .comparisons)
        best = try container.decodeIfPresent(String.self, forKey: .best)
        verdict = try container.decode([String].self, forKey: .verdict)
    }

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

    static func compare(routes: [String], trials: [Trial], seed: UInt64) -> [Comparison] {
        var comparisons: [Comparison] = []
        for (i, first) in routes.enumerated() {
            for second in routes[(i + 1)...] {
                for figure in FigureName.all {
                    let a = trials.filter { $0.route == first }.compactMap { figure.value(of: $0) }
                    let b = trials.filter { $0.route == second }.compactMap { figure.value(of: $0) }
                    guard a.count >= 2, b.count >= 2, let medianA = Statistics.median(a), let medianB = Statistics.median(b) else { continue }
                    let test = Statistics.mannWhitneyU(a, b)
                    let interval = Statistics.bootstrapMedianDifference(a, b, seed: seed &+ UInt64(comparisons.count))
                    comparisons.append(Comparison(figure: figure, first: first, second: second, firstMedian: medianA, secondMedian: medianB,
                                                  mannWhitneyU: test?.u, p: test?.p, medianDifference: medianA - medianB,
                                                  differenceLower: interval?.lower, differenceUpper: interval?.upper,
                                                  significant: (test?.p ?? 1) < significanceLevel))
                }
            }
        }
        return comparisons
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

    public static func percent(_ fraction: Double) -> String { String(format: "%.0f %%", fraction * 100) }

    public static func seconds(_ value: Double) -> String { String(format: "%.2f s", value) }
    public static func signed(_ value: Double) -> String { String(format: "%+.2f s", value) }
    public static func mebibytes(_ value: Double) -> String { String(format: "%.2f MiB/s", value / 1_048_576) }
    public static func pValue(_ p: Double) -> String { p < 0.001 ? "< 0.001" : String(format: "%.3f", p) }

    public static func encoder(pretty: Bool = true) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    public static func decode(_ data: Data) throws(TrialError) -> ABResult {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do {
            return try decoder.decode(ABResult.self, from: data)
        } catch {
            throw TrialError(.badResult, "not an A/B result: \(error)")
        }
    }

    // MARK: Renderings

    public static let csvHeader = ["index", "route", "attempt", "warm", "succeeded", "first_byte_s", "bootstrap_s",
                                   "probe_first_byte_s", "probe_bytes", "throughput_bytes_per_s", "failure_stage",
                                   "failure_progress", "failure_tag", "failure_reason", "events_file"]

    public var csv: String {
        func number(_ value: Double?) -> String { value.map { String(format: "%.6f", $0) } ?? "" }
        return CSV.render(header: Self.csvHeader, rows: trials.map { trial in
            [String(trial.index), trial.route, String(trial.attempt), String(trial.warm), String(trial.succeeded),
             number(trial.firstByteSeconds), number(trial.bootstrapSeconds), number(trial.probeFirstByteSeconds),
             trial.probeBytes.map(String.init) ?? "", number(trial.throughputBytesPerSecond), trial.failure?.stage.rawValue ?? "",
             trial.failure?.progress.map(String.init) ?? "", trial.failure?.tag ?? "", trial.failure?.reason ?? "",
             trial.eventsFile]
        })
    }

    /// The charts: time to 100 %, probe first byte and throughput by route, side by side.
    public var svg: String {
        SmallMultiplesSVG.render(title: "\(trialsPerRoute) trials per route" + (network.map { " on \($0)" } ?? ""),
                                 panels: Self.panels(routes: routes, trials: trials, summaries: summaries))
    }

    static func panels(routes: [String], trials: [Trial], summaries: [RouteSummary]) -> [BoxPlotSVG.Panel] {
        func groups(_ figure: FigureName, scale: Double) -> [BoxPlotSVG.Group] {
            summaries.map { summary in
                let values = trials.filter { $0.route == summary.route }.compactMap { figure.value(of: $0) }.map { $0 / scale }
                let note = figure == .bootstrap ? "\(summary.reachedBootstrap)/\(summary.trials) at 100%" : "\(values.count)/\(summary.trials) probes"
                return BoxPlotSVG.Group(label: summary.route, values: values, note: note)
            }
        }
        return [
            BoxPlotSVG.Panel(id: "bootstrap", title: "Time to 100%", axisLabel: "seconds", groups: groups(.bootstrap, scale: 1)),
            BoxPlotSVG.Panel(id: "first-byte", title: "Probe first byte", axisLabel: "seconds", groups: groups(.probeFirstByte, scale: 1)),
            BoxPlotSVG.Panel(id: "throughput", title: "Throughput", axisLabel: "MiB/s", groups: groups(.throughput, scale: 1_048_576)),
        ]
    }
}

extension ABResult.HarnessError.Code {
    /// The child's directory or files could not be created.
    public static let childSetup = Self("child-setup")
    /// The child process could not be started, or exited before it started its run.
    public static let childStart = Self("child-start")
    /// The child's core refused the configuration the harness gave (e.g. its SOCKS port was
    /// in use) or could not write its data directory.
    public static let childConfiguration = Self("child-configuration")
    /// The child refused its command line (exit status 64).
    public static let childUsage = Self("child-usage")
    /// The child died of a signal nobody sent it.
    public static let childCrashed = Self("child-crashed")
    /// The child said it was ready but named no SOCKS port.
    public static let noSocksPort = Self("no-socks-port")
    /// Nothing listened on the SOCKS port the child named.
    public static let socksUnreachable = Self("socks-unreachable")
}
