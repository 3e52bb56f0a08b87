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
