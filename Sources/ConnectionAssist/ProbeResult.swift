import Foundation
import PosternTor

/// What probing one route found. Holds no bridge data: steps name what was done, not where.
public struct ProbeResult: Sendable, Hashable, Codable {
    public struct Outcome: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
        public static let passed = Outcome(rawValue: "passed")
        public static let failed = Outcome(rawValue: "failed")
        /// Nothing could be probed (e.g. no address known): says nothing either way.
        public static let skipped = Outcome(rawValue: "skipped")
    }

    public struct Step: Sendable, Hashable, Codable {
        /// "tcp", "obfs4-handshake", "snowflake-rendezvous+data-channel", ...
        public var name: String
        public var outcome: Outcome
        public var milliseconds: Double?
        public var problem: ConnectionProblem?
        public init(name: String, outcome: Outcome, milliseconds: Double?, problem: ConnectionProblem? = nil) {
            self.name = name
            self.outcome = outcome
            self.milliseconds = milliseconds
            self.problem = problem
        }
    }

    public var outcome: Outcome
    /// After a handshake reset right after our first packet: whether a SYN-only connect to the
    /// same address then answered (CensorReader's protocol-block row needs it); nil when none was
    /// made.
    public var confirmation: CensorReader.Confirmation? = nil
    /// How long the probe took to pass (or to fail).
    public var milliseconds: Double
    public var steps: [Step]
    /// Peers tried and peers that answered (direct tries a few authorities).
    public var peersTried: Int
    public var peersAnswered: Int
    public var problem: ConnectionProblem?

    public init(outcome: Outcome, milliseconds: Double, steps: [Step], peersTried: Int, peersAnswered: Int,
                problem: ConnectionProblem? = nil) {
        self.outcome = outcome
        self.milliseconds = milliseconds
        self.steps = steps
        self.peersTried = peersTried
        self.peersAnswered = peersAnswered
        self.problem = problem
    }

    /// "passed in 12 ms (tcp, obfs4-handshake)", "failed after 3000 ms: timeout (0 of 2 answered)".
    public var summary: String {
        let names = steps.map(\.name).joined(separator: ", ")
        switch outcome {
        case .passed: return "passed in \(Int(milliseconds.rounded())) ms (\(names))"
        case .skipped: return "not probed"
        default:
            return "failed after \(Int(milliseconds.rounded())) ms: \(problem?.rawValue ?? "other") (\(peersAnswered) of \(peersTried) answered)"
        }
    }
}

extension ProbeResult {
    /// A probe that failed at the connect (refused, no answer, no route) may be repeated in the
    /// pass; one that got past it (reset, silence or a wrong reply after our first packet) or that
    /// Postern's gate held back may not: another handshake would only add to the evidence of a
    /// censor that judges first packets (docs/plans/CENSOR-AWARE-ASSIST.md §3).
    package var mayBeRepeated: Bool {
        guard outcome == .failed, let problem else { return false }
        return [.refused, .timeout, .noRoute].contains(problem)
    }
}
