import Foundation
import Glibc

extension Process {
    /// `run()` with the calling thread's signal mask emptied for the spawn.
    ///
    /// A child inherits the signal mask of the thread that starts it, and Foundation's `Process`
    /// does not reset it. Swift concurrency runs on libdispatch worker threads, which block
    /// SIGTERM, SIGINT, SIGHUP, SIGCHLD and most other signals, so a program started from async
    /// code with plain `run()` never sees a SIGTERM: Debian's tor started that way by
    /// `postern-bench memory` ignored `terminate()`, and the benchmark hung in `waitUntilExit()`
    /// after it had measured everything. (Go programs such as obfs4proxy unblock what they
    /// handle; C programs like tor do not. `postern` itself reads SIGTERM through a signalfd,
    /// which works with the signal blocked.) Foundation spawns on the calling thread, so
    /// emptying this thread's mask around `run()` gives the child an empty one; the mask is
    /// restored at once.
    public func runWithDefaultSignalMask() throws {
        var none = sigset_t()
        var previous = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        try run()
    }

    /// SIGTERM, then SIGKILL when the process has not exited after `grace`; returns once it has
    /// exited. Waits by polling so that no thread of the cooperative pool blocks in
    /// `waitUntilExit()` on a child that does not stop.
    public func stop(grace: Duration = .seconds(10)) async {
        guard isRunning else { return }
        kill(processIdentifier, SIGTERM)
        let started = ContinuousClock.now
        while isRunning, ContinuousClock.now - started < grace {
            try? await Task.sleep(for: .milliseconds(50))
        }
        if isRunning { kill(processIdentifier, SIGKILL) }
        while isRunning { try? await Task.sleep(for: .milliseconds(20)) }
    }
}
