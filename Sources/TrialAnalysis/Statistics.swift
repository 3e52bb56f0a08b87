import Foundation

/// Descriptive statistics and two-sample tests for A/B trials of routes into Tor. Pure functions on
/// `[Double]`; no I/O. Quantiles follow the "type 7" definition (linear interpolation between
/// order statistics), the default of R, NumPy and spreadsheets, so figures can be checked elsewhere.
public enum Statistics {
    /// The `q`-quantile (0...1) of `values`, nil when empty.
    public static func quantile(_ values: [Double], _ q: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let position = Double(sorted.count - 1) * min(max(q, 0), 1)
        let lower = Int(position.rounded(.down))
        let upper = min(lower + 1, sorted.count - 1)
        let fraction = position - Double(lower)
        return sorted[lower] + (sorted[upper] - sorted[lower]) * fraction
    }

    public static func median(_ values: [Double]) -> Double? { quantile(values, 0.5) }

    /// The five numbers a box plot draws, plus the points beyond the whiskers.
    public struct BoxSummary: Sendable, Equatable {
        public var lowerWhisker: Double
        public var firstQuartile: Double
        public var median: Double
        public var thirdQuartile: Double
        public var upperWhisker: Double
        /// Values further than 1.5 × IQR from the box.
        public var outliers: [Double]
    }

    /// Tukey's box: quartiles, whiskers at the most extreme values within 1.5 × IQR of the box.
    public static func boxSummary(_ values: [Double]) -> BoxSummary? {
        guard let q1 = quantile(values, 0.25), let q2 = quantile(values, 0.5), let q3 = quantile(values, 0.75) else {
            return nil
        }
        let reach = 1.5 * (q3 - q1)
        let inside = values.filter { $0 >= q1 - reach && $0 <= q3 + reach }
        return BoxSummary(lowerWhisker: inside.min() ?? q1, firstQuartile: q1, median: q2, thirdQuartile: q3,
                          upperWhisker: inside.max() ?? q3,
                          outliers: values.filter { $0 < q1 - reach || $0 > q3 + reach }.sorted())
    }

    /// Ranks 1...n of `values` in their order, ties given the mean of the ranks they span.
    public static func ranks(_ values: [Double]) -> [Double] {
        let order = values.indices.sorted { values[$0] < values[$1] }
        var ranks = [Double](repeating: 0, count: values.count)
        var start = 0
        while start < order.count {
            var end = start
            while end + 1 < order.count, values[order[end + 1]] == values[order[start]] { end += 1 }
            let meanRank = Double(start + end + 2) / 2
            for position in start...end { ranks[order[position]] = meanRank }
            start = end + 1
        }
        return ranks
    }

    /// The result of a two-sided Mann–Whitney U test.
    public struct MannWhitney: Sendable, Equatable {
        /// U of the first sample: the number of (a, b) pairs with a > b, ties counting one half.
        public var u: Double
        /// The normal deviate, with tie and continuity corrections.
        public var z: Double
        /// Two-sided p-value from the normal approximation.
        public var p: Double
    }

    /// Two-sided Mann–Whitney U test by the normal approximation with a tie correction of the
    /// variance and a continuity correction of 0.5 (what SciPy's `mannwhitneyu(a, b,
    /// method="asymptotic")` computes). Nil when a sample is empty or every value is tied.
    public static func mannWhitneyU(_ a: [Double], _ b: [Double]) -> MannWhitney? {
        guard !a.isEmpty, !b.isEmpty else { return nil }
        let n1 = Double(a.count), n2 = Double(b.count), n = n1 + n2
        let allRanks = ranks(a + b)
        let rankSumA = allRanks.prefix(a.count).reduce(0, +)
        let u = rankSumA - n1 * (n1 + 1) / 2
        let mean = n1 * n2 / 2
        // Σ(t³ − t) over groups of tied values.
        var tieTerm = 0.0
        for count in Dictionary(grouping: a + b, by: { $0 }).values.map(\.count) where count > 1 {
            let t = Double(count)
            tieTerm += t * t * t - t
        }
        let variance = n1 * n2 / 12 * ((n + 1) - tieTerm / (n * (n - 1)))
        guard variance > 0 else { return nil }
        let deviation = u - mean
        let corrected = deviation == 0 ? 0 : (abs(deviation) - 0.5) * (deviation > 0 ? 1 : -1)
        let z = corrected / variance.squareRoot()
        let p = min(1, erfc(abs(z) / 2.0.squareRoot()))
        return MannWhitney(u: u, z: z, p: p)
    }

    /// A percentile bootstrap confidence interval.
    public struct Interval: Sendable, Equatable {
        /// The statistic on the samples themselves.
        public var estimate: Double
        public var lower: Double
        public var upper: Double
        public var level: Double

        public var excludesZero: Bool { lower > 0 || upper < 0 }
    }

    /// Percentile bootstrap interval of median(a) − median(b): each sample resampled with
    /// replacement `resamples` times from a generator seeded with `seed`, so a run can be repeated.
    public static func bootstrapMedianDifference(_ a: [Double], _ b: [Double], level: Double = 0.95,
                                                 resamples: Int = 2000, seed: UInt64) -> Interval? {
        guard let medianA = median(a), let medianB = median(b), resamples > 0 else { return nil }
        var generator = SplitMix64(seed: seed)
        var differences: [Double] = []
        differences.reserveCapacity(resamples)
        var scratchA = a, scratchB = b
        for _ in 0..<resamples {
            for index in scratchA.indices { scratchA[index] = a[Int(generator.next() % UInt64(a.count))] }
            for index in scratchB.indices { scratchB[index] = b[Int(generator.next() % UInt64(b.count))] }
            differences.append(median(scratchA)! - median(scratchB)!)
        }
        let tail = (1 - level) / 2
        return Interval(estimate: medianA - medianB, lower: quantile(differences, tail)!,
                        upper: quantile(differences, 1 - tail)!, level: level)
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): small, fast and reproducible from a seed, which is what
/// trial ordering and bootstrap resampling need (not a cryptographic generator).
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The order trials run in: A B C A B C … so that drift over time (network load, a censor's
/// mood, the machine) falls on every route alike, or that list shuffled from a seed.
public enum TrialSchedule {
    public struct Slot: Sendable, Equatable {
        /// Which route (index into the caller's list).
        public var route: Int
        /// The n-th trial of that route in running order, from 1.
        public var attempt: Int
    }

    public static func make(routes: Int, trialsPerRoute: Int, shuffleSeed: UInt64? = nil) -> [Slot] {
        var routesInOrder: [Int] = []
        for _ in 0..<max(trialsPerRoute, 0) { routesInOrder += Array(0..<max(routes, 0)) }
        if let shuffleSeed {
            var generator = SplitMix64(seed: shuffleSeed)
            routesInOrder.shuffle(using: &generator)
        }
        var attempts = [Int](repeating: 0, count: max(routes, 0))
        return routesInOrder.map { route in
            attempts[route] += 1
            return Slot(route: route, attempt: attempts[route])
        }
    }
}
