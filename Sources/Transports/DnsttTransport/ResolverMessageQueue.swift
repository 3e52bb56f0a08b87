import Synchronization

/// A bounded first-in first-out queue of DNS messages between tasks: what a link's `send` leaves
/// for its writer, and what its readers leave for `receive`. Full means dropped (the newest), never
/// a wait: the messages are KCP's, which retransmits what mattered, and a resolver that answers
/// faster than the session reads must not grow memory. `next()` waits for a message and returns nil
/// once the queue is closed or the waiting task is cancelled; any number of tasks may wait.
final class ResolverMessageQueue: Sendable {
    private struct State {
        var messages: [[UInt8]] = []
        var head = 0
        var bytes = 0
        var closed = false
        var waiters: [UInt64: CheckedContinuation<[UInt8]?, Never>] = [:]
        var nextWaiter: UInt64 = 0
    }

    /// Messages held at most, and their bytes at most.
    let capacity: Int
    let byteLimit: Int
    private let state = Mutex(State())

    init(capacity: Int, byteLimit: Int) {
        self.capacity = max(1, capacity)
        self.byteLimit = max(1, byteLimit)
    }

    /// Hands `message` to a waiting task or keeps it; false when it was dropped (full or closed).
    @discardableResult
    func push(_ message: [UInt8]) -> Bool {
        let waiter = state.withLock { state -> CheckedContinuation<[UInt8]?, Never>?? in
            guard !state.closed else { return .none }
            if let key = state.waiters.keys.first {
                return .some(state.waiters.removeValue(forKey: key))
            }
            let held = state.messages.count - state.head
            guard held < capacity, state.bytes + message.count <= byteLimit else { return .none }
            state.messages.append(message)
            state.bytes += message.count
            return .some(nil)
        }
        switch waiter {
        case .none: return false
        case .some(let continuation?): continuation.resume(returning: message); return true
        case .some(nil): return true
        }
    }

    /// Messages held now.
    var count: Int { state.withLock { $0.messages.count - $0.head } }

    /// Drops every message held (DoH's pause after a non-200 answer).
    func removeAll() {
        state.withLock { state in
            state.messages.removeAll()
            state.head = 0
            state.bytes = 0
        }
    }

    /// The oldest message, waiting for one; nil once closed (held messages are dropped then) or
    /// when the calling task is cancelled.
    func next() async -> [UInt8]? {
        let key = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[UInt8]?, Never>) in
                let ready = state.withLock { state -> [UInt8]?? in
                    if state.closed || Task.isCancelled { return .some(nil) }
                    if state.head < state.messages.count {
                        let message = state.messages[state.head]
                        state.head += 1
                        state.bytes -= message.count
                        // Compact now and then so the array does not only grow.
                        if state.head == state.messages.count || state.head >= 64 {
                            state.messages.removeFirst(state.head)
                            state.head = 0
                        }
                        return .some(message)
                    }
                    state.waiters[key] = continuation
                    return .none
                }
                if case .some(let message) = ready { continuation.resume(returning: message) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: key) }
            waiter?.resume(returning: nil)
        }
    }

    /// Ends every wait with nil and drops what is held; later pushes are dropped.
    func close() {
        let waiters = state.withLock { state -> [CheckedContinuation<[UInt8]?, Never>] in
            state.closed = true
            state.messages.removeAll()
            state.head = 0
            state.bytes = 0
            let waiters = Array(state.waiters.values)
            state.waiters.removeAll()
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: nil) }
    }
}
