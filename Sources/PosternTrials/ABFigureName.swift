import Foundation
import TrialAnalysis

extension ABResult {
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
}
