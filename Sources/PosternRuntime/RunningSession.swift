import Foundation
import PosternTor
import PosternSystem

/// A session another process runs (a `postern run`), found through the status file it publishes:
/// its SOCKS endpoint, and its readiness read from that file. Lets a second command ride the
/// running tor instead of starting its own (tor_api allows one per process, and two would
/// collide on the SOCKS port and the data directory).
public struct RunningSession: Sendable, TorReadinessSource {
    /// The status file the session publishes (``RunStatusRecord``).
    public let statusFile: URL
    /// The process that runs the session.
    public let pid: Int32
    /// The session's SOCKS5 listener, proven to be that process's.
    public let socks: SocksEndpoint

    /// The session whose status file this is, when its process still lives; nil otherwise (no
    /// file, a file left by a process that died, or one that does not parse).
    ///
    /// A live process is not trusted on its pid alone (``SocksListenerOwnership``): it must hold
    /// the SOCKS listener the file names, under our uid. When it does not (a stale file whose pid
    /// was reused, another account on the port), this throws instead of returning nil, so that a
    /// caller neither attaches to that port nor starts a tor of its own beside it without being told.
    /// A pid we may not signal (EPERM: another account's process, as a user without privilege
    /// sees it) is such a process too, not a dead one.
    public static func find(statusFile: URL) throws(SessionError) -> RunningSession? {
        guard let record = try? RunStatusRecord.read(from: statusFile), record.pid > 0,
              let socks = try? SocksEndpoint(parsing: record.socks) else { return nil }
        let failure: String
        switch ProcessPresence.of(record.pid) {
        case .gone:
            return nil
        case .anotherAccounts:
            failure = "process \(record.pid) belongs to another account"
        case .signalable:
            guard let unproven = SocksListenerOwnership.failure(pid: record.pid, socks: socks) else {
                return RunningSession(statusFile: statusFile, pid: record.pid, socks: socks)
            }
            failure = unproven
        }
        throw SessionError(.unprovenSession, kind: .failure,
                           "\(statusFile.path) names process \(record.pid) with socks5 \(socks), but that is not a session of ours (\(failure)); not using it. If no 'postern run' of yours is running, remove the file")
    }

    /// The latest status the session published, nil once it stopped, and nil when its SOCKS
    /// listener is no longer provably its own (asked before every connection through it).
    public var record: RunStatusRecord? {
        guard let record = try? RunStatusRecord.read(from: statusFile), record.pid == pid, ProcessPresence.of(pid) == .signalable,
              SocksListenerOwnership.failure(pid: pid, socks: socks) == nil else { return nil }
        return record
    }

    /// True when the status file says ready and the session is still provably running.
    public func torIsReady() async -> Bool { record?.isReady ?? false }

    /// Polls the status file (it is replaced on every change) until ready, stopped or `timeout`.
    public func waitUntilTorReady(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, !Task.isCancelled {
            guard let record else { return false }
            if record.isReady { return true }
            try? await Task.sleep(for: .milliseconds(250))
        }
        return false
    }
}
