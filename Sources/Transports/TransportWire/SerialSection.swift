import Synchronization

/// Runs bodies one after another, in the order they asked (FIFO), across suspension points: the
/// TLS streams' sends (OpenSSL's here, NSS's in TransportTLS), so that records leave in the order
/// the library made them, even when a reader (a TLS 1.3 key update answer) and a writer both
/// produce some.
package final class SerialSection: Sendable {
    private struct State {
        var busy = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    package init() {}

    package func run<T>(_ body: () async throws -> T) async throws -> T {
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
