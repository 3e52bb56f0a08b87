import Foundation
import TrialAnalysis

extension ABResult {
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

    /// Each pair of routes on each figure where both have at least two values: medians, Mann–Whitney U,
    /// a bootstrap interval of the difference of medians (seeded), and whether it is beyond chance.
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
}
