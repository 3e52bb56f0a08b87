import Foundation
import Testing
@testable import TrialAnalysis

/// Reference values from SciPy 1.17.1 / NumPy on this machine:
/// `scipy.stats.mannwhitneyu(a, b, method="asymptotic")` and `numpy.percentile` (linear).
struct StatisticsTests {
    @Test func quantilesMatchNumPyLinearInterpolation() {
        #expect(Statistics.quantile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9)! == 9.1)
        #expect(abs(Statistics.quantile([3.1, 3.4, 2.9, 4.2, 3.3], 0.9)! - 3.88) < 1e-12)
        #expect(Statistics.quantile([5, 1, 4], 0.25)! == 2.5)
        #expect(Statistics.median([4, 1, 3, 2])! == 2.5)
        #expect(Statistics.median([7])! == 7)
        #expect(Statistics.median([]) == nil)
    }

    @Test func tiedValuesShareTheirMeanRank() {
        #expect(Statistics.ranks([10, 20, 20, 5]) == [2, 3.5, 3.5, 1])
        #expect(Statistics.ranks([1, 1, 1]) == [2, 2, 2])
    }

    @Test func mannWhitneyWithoutTiesMatchesSciPy() throws {
        let result = try #require(Statistics.mannWhitneyU([3.1, 3.4, 2.9, 4.2, 3.3], [8.2, 7.9, 9.5, 8.0, 12.1]))
        #expect(result.u == 0)
        #expect(abs(result.p - 0.012185780355344813) < 1e-12)
        #expect(result.z < 0)
        // Swapping the samples mirrors U and keeps p.
        let swapped = try #require(Statistics.mannWhitneyU([8.2, 7.9, 9.5, 8.0, 12.1], [3.1, 3.4, 2.9, 4.2, 3.3]))
        #expect(swapped.u == 25)
        #expect(abs(swapped.p - result.p) < 1e-12)
    }

    @Test func mannWhitneyWithTiesMatchesSciPy() throws {
        let result = try #require(Statistics.mannWhitneyU([1, 2, 2, 3, 4, 5, 5, 5], [2, 3, 3, 6, 7, 7, 8]))
        #expect(result.u == 15)
        #expect(abs(result.p - 0.14328062600938993) < 1e-12)
    }

    @Test func mannWhitneyUnequalSizesMatchesSciPy() throws {
        let result = try #require(Statistics.mannWhitneyU([19, 22, 16, 29, 24], [20, 11, 17, 12]))
        #expect(result.u == 17)
        #expect(abs(result.p - 0.11134688653314041) < 1e-12)
    }

    @Test func mannWhitneyRefusesDegenerateInput() {
        #expect(Statistics.mannWhitneyU([], [1, 2]) == nil)
        #expect(Statistics.mannWhitneyU([3, 3], [3, 3, 3]) == nil, "all tied: no variance")
    }

    @Test func bootstrapIntervalOfSeparatedSamplesExcludesZero() throws {
        let fast = [3.1, 3.4, 2.9, 4.2, 3.3, 3.0, 3.6]
        let slow = [8.2, 7.9, 9.5, 8.0, 12.1, 8.8, 9.0]
        let interval = try #require(Statistics.bootstrapMedianDifference(fast, slow, seed: 42))
        #expect(abs(interval.estimate - (3.3 - 8.8)) < 1e-12)
        #expect(interval.upper < 0 && interval.excludesZero)
        #expect(interval.lower <= interval.estimate && interval.estimate <= interval.upper)
        // Every resampled median lies within the samples, so the bounds do too.
        #expect(interval.lower >= 2.9 - 12.1 && interval.upper <= 4.2 - 7.9)
        // The same seed gives the same interval; another seed may not.
        #expect(Statistics.bootstrapMedianDifference(fast, slow, seed: 42) == interval)
    }

    @Test func bootstrapIntervalOfOverlappingSamplesContainsZero() throws {
        let a = [5.0, 6, 7, 8, 9, 10]
        let b = [5.5, 6.5, 7.5, 8.5, 9.5, 10.5]
        let interval = try #require(Statistics.bootstrapMedianDifference(a, b, seed: 7))
        #expect(!interval.excludesZero)
        #expect(abs(interval.estimate - -0.5) < 1e-12)
    }

    @Test func bootstrapOfConstantSamplesIsExact() throws {
        let interval = try #require(Statistics.bootstrapMedianDifference([2, 2, 2], [5, 5], seed: 1))
        #expect(interval.estimate == -3 && interval.lower == -3 && interval.upper == -3)
    }

    @Test func boxSummaryFindsOutliers() throws {
        let box = try #require(Statistics.boxSummary([1, 2, 3, 4, 5, 6, 7, 8, 100]))
        #expect(box.firstQuartile == 3 && box.median == 5 && box.thirdQuartile == 7)
        #expect(box.outliers == [100])
        #expect(box.upperWhisker == 8 && box.lowerWhisker == 1)
    }

    @Test func splitMixIsReproducible() {
        var first = SplitMix64(seed: 1234567)
        var second = SplitMix64(seed: 1234567)
        let a = (0..<5).map { _ in first.next() }
        #expect(a == (0..<5).map { _ in second.next() })
        // The reference implementation's first output for seed 1234567.
        #expect(a[0] == 6457827717110365317)
    }
}

struct TrialScheduleTests {
    @Test func interleavedRunsEveryRouteInTurn() {
        let slots = TrialSchedule.make(routes: 3, trialsPerRoute: 2)
        #expect(slots.map(\.route) == [0, 1, 2, 0, 1, 2])
        #expect(slots.map(\.attempt) == [1, 1, 1, 2, 2, 2])
    }

    @Test func shuffledOrderIsReproducibleAndComplete() {
        let first = TrialSchedule.make(routes: 3, trialsPerRoute: 5, shuffleSeed: 99)
        #expect(first == TrialSchedule.make(routes: 3, trialsPerRoute: 5, shuffleSeed: 99), "the seed fixes the order")
        #expect(first.map(\.route) != TrialSchedule.make(routes: 3, trialsPerRoute: 5).map(\.route), "shuffled")
        for route in 0..<3 {
            // Each route five times, its attempts numbered 1…5 in running order.
            #expect(first.filter { $0.route == route }.map(\.attempt) == [1, 2, 3, 4, 5])
        }
        #expect(TrialSchedule.make(routes: 0, trialsPerRoute: 3).isEmpty)
    }
}
