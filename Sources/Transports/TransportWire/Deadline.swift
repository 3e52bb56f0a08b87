// Deadlines, the one helper every wait on a peer goes through. Two ways to end an operation that
// runs too long, both on the same timer:
//   - `expired` makes the operation fail (aborting its socket, typically), and the operation throws
//     whatever error its owner chose for that: the operation runs in the caller's task;
//   - `timedOut` (for operations that end when cancelled): the operation runs in a child task, is
//     cancelled when the limit passes, and the caller gets `timedOut()`'s error.
import Synchronization

/// Runs `operation`; if `limit` passes first, calls `expired`, which must make the operation fail
/// (typically by aborting its socket with a typed timeout error).
public func withDeadline<T: Sendable>(
    _ limit: Duration,
    expired: @escaping @Sendable () -> Void,
    operation: () async throws -> T
) async throws -> T {
    let timer = Task {
        try await Task.sleep(for: limit)
        expired()
    }
    defer { timer.cancel() }
    return try await operation()
}

/// Runs `operation` in a child task, cancelling it when `limit` passes; the caller then gets
/// `timedOut()`'s error, whatever the cancelled operation threw. The result comes once the
/// operation has ended, so it must end when cancelled.
public func withDeadline<T: Sendable>(
    _ limit: Duration,
    timedOut: @escaping @Sendable () -> any Error,
    operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let work = Task { try await operation() }
    let expiry = ExpiryFlag()
    return try await withTaskCancellationHandler {
        do {
            return try await withDeadline(limit, expired: {
                expiry.set()
                work.cancel()
            }) {
                try await work.value
            }
        } catch {
            if expiry.isSet { throw timedOut() }
            throw error
        }
    } onCancel: {
        work.cancel()
    }
}

/// Whether a deadline's timer fired.
private final class ExpiryFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .sequentiallyConsistent) }
    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
}
