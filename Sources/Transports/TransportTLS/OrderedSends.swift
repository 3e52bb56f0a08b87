import Synchronization

/// Runs bodies one after another in the order they asked (FIFO), across suspension points: the
/// records NSS queues are taken and written inside one section, so they leave in NSS's order even
/// when a reader (a TLS 1.3 key update answer) and a writer both produce some.
final class OrderedSends: Sendable {
    private struct State {
        var busy = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    func run<T>(_ body: () async throws -> T) async throws -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let enterNow = state.withLock { state -> Bool in
                if state.busy { state.waiting.append(continuation); return false }
                state.busy = true
                return true
            }
            if enterNow { continuation.resume() }
        }
        defer {
            let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if state.waiting.isEmpty { state.busy = false; return nil }
                return state.waiting.removeFirst()
            }
            next?.resume()
        }
        return try await body()
    }
}
