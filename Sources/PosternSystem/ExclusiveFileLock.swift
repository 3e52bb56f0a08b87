import Glibc

/// An exclusive `flock` on a lock file, held for as long as the value lives: the one way Postern's
/// small stores (bridges.json, connection-assist.json) keep a read-modify-write whole when several
/// postern processes change settings at once. The descriptor has this one owner; deinit closes it,
/// which releases the lock (also when the process dies).
public final class ExclusiveFileLock {
    private let descriptor: Int32

    /// Opens (creating it 0600) `path` and waits for the lock. Errors name the call: "open" when
    /// the file cannot be opened, "flock" when it cannot be locked.
    public init(path: String) throws(SystemCallError) {
        let opened = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard opened >= 0 else { throw SystemCallError(call: "open", number: errno) }
        do {
            try SystemCall.retrying("flock") { flock(opened, LOCK_EX) }
        } catch {
            close(opened)
            throw error
        }
        descriptor = opened
    }

    deinit { close(descriptor) }
}
