#if canImport(Glibc)
import Glibc
#endif

/// Whether a pid names a live process, from `kill(pid, 0)`: a process we may not signal (EPERM) is
/// alive and another account's, which a caller must not mistake for a dead one (a stale status
/// file whose pid was reused by another account reads as EPERM to a user without privilege).
enum ProcessPresence: Equatable {
    /// No such process (ESRCH).
    case gone
    /// Alive, and we may signal it (ours, or we are privileged).
    case signalable
    /// Alive, and not ours to signal.
    case anotherAccounts

    static func of(_ pid: Int32) -> ProcessPresence {
        if kill(pid, 0) == 0 { return .signalable }
        return errno == EPERM ? .anotherAccounts : .gone
    }
}
