import Synchronization
import TransportBase
import TransportWire

/// What a transport's staged dial showed `postern bridges test` (webtunnel and dnstt, whose lines
/// hold no address to connect to): when each stage was first reached, in milliseconds since the
/// start, and how the dial ended. Each check turns these into its steps and words.
struct StagedProbe<Stage: Hashable & Sendable> {
    /// When each stage was first seen.
    var reached: [Stage: Double]
    /// The dial's error; nil when it completed.
    var failure: (any Error)?
    /// When the dial ended, either way.
    var ended: Double

    /// Runs `dial` with a stage callback and closes the connection it returns. `limit` bounds the
    /// whole dial (the transport's own waits are each shorter).
    static func run(limit: Duration,
                    _ dial: @escaping @Sendable (@escaping @Sendable (Stage) -> Void) async throws -> any TransportConnection) async -> StagedProbe {
        let reached = Mutex<[Stage: Double]>([:])
        let started = ContinuousClock.now
        var failure: (any Error)?
        do {
            let connection = try await withDeadline(limit, timedOut: { TransportError.noAnswer(within: limit) }) {
                try await dial { stage in
                    let at = BridgeHealthCheck.milliseconds(since: started)
                    reached.withLock { $0[stage] = at }
                }
            }
            connection.close()
        } catch {
            failure = error
        }
        return StagedProbe(reached: reached.withLock { $0 }, failure: failure, ended: BridgeHealthCheck.milliseconds(since: started))
    }
}
