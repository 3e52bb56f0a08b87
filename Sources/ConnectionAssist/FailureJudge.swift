import Foundation
import PosternTor

/// Decides from failure signals whether a route has failed: its connections are refused, reset
/// or time out repeatedly, towards several distinct peers (or towards every peer the route has).
/// Progress forgets the failures seen before it: a working network has the odd dead relay.
public struct FailureJudge: Sendable, Hashable {
    /// Failures needed in all.
    public var minimumFailures: Int
    /// Distinct peers needed (capped at the number of peers the route has).
    public var minimumDistinctPeers: Int

    public init(minimumFailures: Int = 3, minimumDistinctPeers: Int = 2) {
        self.minimumFailures = minimumFailures
        self.minimumDistinctPeers = minimumDistinctPeers
    }

    /// What the judge has seen since the route's last progress.
    public struct Tally: Sendable, Hashable {
        public private(set) var failures = 0
        public private(set) var peers: Set<String> = []
        public private(set) var problems: [ConnectionProblem: Int] = [:]
        /// The highest COUNT tor reported in a RECOMMENDATION=warn bootstrap warning.
        public private(set) var torWarnCount = 0
        public init() {}

        mutating func add(_ signal: ConnectionSignal) {
            // tor reports each failed OR connection twice (ORCONN and a bootstrap warning): the
            // warning adds its peer and COUNT, not another failure.
            if signal.source != .bootstrapWarning { failures += 1 }
            if let peer = signal.peer, peers.count < 64 { peers.insert(peer) }
            problems[signal.problem, default: 0] += 1
            if signal.torRecommendsWarning, let count = signal.count { torWarnCount = max(torWarnCount, count) }
        }

        /// The most frequent problem (ties broken by name, so the result is stable).
        public var mainProblem: ConnectionProblem? {
            problems.max { $0.value < $1.value || ($0.value == $1.value && $0.key.rawValue > $1.key.rawValue) }?.key
        }
    }

    /// True when `tally` is enough to give up on a route with `peerCount` peers (nil: unknown,
    /// e.g. direct, where tor picks among many authorities and relays).
    public func hasFailed(_ tally: Tally, peerCount: Int?) -> Bool {
        let needed = min(minimumDistinctPeers, max(peerCount ?? minimumDistinctPeers, 1))
        if tally.failures >= minimumFailures && tally.peers.count >= needed { return true }
        // tor counted the problems itself and recommends warning about them.
        return tally.torWarnCount >= minimumFailures && tally.peers.count >= needed
    }
}
