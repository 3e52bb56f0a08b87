import Synchronization

/// Where the connections a dialer opens are reported: the last ``capacity`` finished flows and the
/// flows still open, for connection assist to read. One per session; ``OutboundDialer`` reports to
/// the ledger it was given, and a socket reports its own end (``TCPSocket``).
///
/// Memory is bounded: finished reports beyond ``capacity`` drop the oldest, and at most
/// ``openCapacity`` open flows are tracked (later ones count in ``untrackedFlows`` only).
public final class FlowLedger: Sendable {
    public static let capacity = 1024
    public static let openCapacity = 4096

    private struct OpenFlow {
        let peer: TransportEndpoint
        let origin: FlowOrigin
        let throughProxy: Bool
        let counters: FlowCounters
    }

    private struct State {
        var finished: [FlowReport] = []
        var open: [UInt64: OpenFlow] = [:]
        var nextID: UInt64 = 0
        var untracked = 0
    }

    private let state = Mutex(State())
    private let onReport: (@Sendable (FlowReport) -> Void)?

    /// `onReport` hears each finished flow as it ends, outside the ledger's lock.
    public init(onReport: (@Sendable (FlowReport) -> Void)? = nil) {
        self.onReport = onReport
    }

    /// Finished flows, oldest first.
    public func finishedFlows() -> [FlowReport] { state.withLock { $0.finished } }

    /// The flows still open, as they stand now.
    public func openFlows() -> [FlowReport] {
        let open = state.withLock { Array($0.open.values) }
        return open.map { FlowReport(peer: $0.peer, origin: $0.origin, throughProxy: $0.throughProxy, counts: $0.counters.snapshot(),
                                     error: nil, isOpen: true, endedByPeer: false) }
    }

    /// Flows that were not tracked while open because ``openCapacity`` were.
    public var untrackedFlows: Int { state.withLock { $0.untracked } }

    func begin(peer: TransportEndpoint, origin: FlowOrigin, throughProxy: Bool, counters: FlowCounters) -> FlowEntry {
        let id = state.withLock { state -> UInt64? in
            guard state.open.count < Self.openCapacity else {
                state.untracked += 1
                return nil
            }
            state.nextID &+= 1
            state.open[state.nextID] = OpenFlow(peer: peer, origin: origin, throughProxy: throughProxy, counters: counters)
            return state.nextID
        }
        return FlowEntry(ledger: self, id: id, peer: peer, origin: origin, throughProxy: throughProxy, counters: counters)
    }

    fileprivate func end(_ id: UInt64?, _ report: FlowReport) {
        state.withLock { state in
            if let id { state.open[id] = nil }
            if state.finished.count >= Self.capacity { state.finished.removeFirst(state.finished.count - Self.capacity + 1) }
            state.finished.append(report)
        }
        onReport?(report)
    }
}

/// One flow's place in a ledger: the socket ends it once, with what it saw last.
final class FlowEntry: Sendable {
    private let ledger: FlowLedger
    private let id: UInt64?
    private let peer: TransportEndpoint
    private let origin: FlowOrigin
    private let throughProxy: Bool
    private let counters: FlowCounters
    private let ended = Atomic<Bool>(false)

    fileprivate init(ledger: FlowLedger, id: UInt64?, peer: TransportEndpoint, origin: FlowOrigin, throughProxy: Bool, counters: FlowCounters) {
        self.ledger = ledger
        self.id = id
        self.peer = peer
        self.origin = origin
        self.throughProxy = throughProxy
        self.counters = counters
    }

    /// The first call counts; later ones are ignored.
    func end(error: TransportError?, endedByPeer: Bool) {
        guard ended.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        ledger.end(id, FlowReport(peer: peer, origin: origin, throughProxy: throughProxy, counts: counters.snapshot(),
                                  error: error, isOpen: false, endedByPeer: endedByPeer))
    }
}
