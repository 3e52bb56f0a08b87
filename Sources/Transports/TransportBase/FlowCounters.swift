import Synchronization

/// What one TCP connection has done so far, counted as it goes: bytes each way, when it connected,
/// when we first wrote, when the peer's last byte came. Connection assist reads these to tell a
/// censor's techniques apart (a reset right after our first packet, data that stops after some KB
/// on a connection that stays open); docs/plans/CENSOR-AWARE-ASSIST.md section 1.
///
/// Lock-free (relaxed atomics): the data path pays two atomic adds and one clock read per socket
/// call. Times are offsets from the counters' creation, just before the connect.
public final class FlowCounters: Sendable {
    private let started = ContinuousClock.now
    private let sent = Atomic<Int>(0)
    private let received = Atomic<Int>(0)
    /// Offsets in nanoseconds; -1 until it happened.
    private let connectedAt = Atomic<Int64>(-1)
    private let firstWriteAt = Atomic<Int64>(-1)
    private let lastWriteAt = Atomic<Int64>(-1)
    private let lastReadAt = Atomic<Int64>(-1)

    public init() {}

    private func now() -> Int64 {
        let elapsed = ContinuousClock.now - started
        let (seconds, attoseconds) = elapsed.components
        return seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
    }

    func didConnect() { connectedAt.store(now(), ordering: .relaxed) }

    func didWrite(_ count: Int) {
        guard count > 0 else { return }
        sent.wrappingAdd(count, ordering: .relaxed)
        let at = now()
        lastWriteAt.store(at, ordering: .relaxed)
        if firstWriteAt.load(ordering: .relaxed) < 0 {
            _ = firstWriteAt.compareExchange(expected: -1, desired: at, ordering: .relaxed)
        }
    }

    func didRead(_ count: Int) {
        guard count > 0 else { return }
        received.wrappingAdd(count, ordering: .relaxed)
        lastReadAt.store(now(), ordering: .relaxed)
    }

    /// The counts and times now.
    public func snapshot() -> FlowCounts {
        func offset(_ value: Int64) -> Duration? { value < 0 ? nil : .nanoseconds(value) }
        return FlowCounts(started: started, bytesSent: sent.load(ordering: .relaxed), bytesReceived: received.load(ordering: .relaxed),
                          connectedAfter: offset(connectedAt.load(ordering: .relaxed)),
                          firstWriteAfter: offset(firstWriteAt.load(ordering: .relaxed)),
                          lastWriteAfter: offset(lastWriteAt.load(ordering: .relaxed)),
                          lastReadAfter: offset(lastReadAt.load(ordering: .relaxed)),
                          age: .nanoseconds(now()))
    }
}

/// A snapshot of ``FlowCounters``: all times are offsets from the start of the connect.
public struct FlowCounts: Sendable, Equatable {
    /// When the connect began: orders flows in time, and the offsets below count from it.
    public let started: ContinuousClock.Instant
    public let bytesSent: Int
    public let bytesReceived: Int
    /// When the TCP handshake completed; nil if it never did.
    public let connectedAfter: Duration?
    public let firstWriteAfter: Duration?
    public let lastWriteAfter: Duration?
    /// When the peer's most recent byte arrived.
    public let lastReadAfter: Duration?
    /// How long the flow has existed (when it ended, for a finished flow).
    public let age: Duration

    public init(started: ContinuousClock.Instant, bytesSent: Int, bytesReceived: Int, connectedAfter: Duration?,
                firstWriteAfter: Duration?, lastWriteAfter: Duration?, lastReadAfter: Duration?, age: Duration) {
        self.started = started
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
        self.connectedAfter = connectedAfter
        self.firstWriteAfter = firstWriteAfter
        self.lastWriteAfter = lastWriteAfter
        self.lastReadAfter = lastReadAfter
        self.age = age
    }
}
