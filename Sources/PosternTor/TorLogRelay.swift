internal import CSpawn
import Foundation
import PosternSystem
import Synchronization

/// Writes tor.log for tor, scrubbed. tor logs into a pipe (`Log warn file /proc/self/fd/N`; tor's
/// add_file_log accepts a pipe), a thread of ours reads its lines, passes each through
/// ``TorLogScrubber`` and appends it to the log file (created 0600). One relay per core run.
///
/// Bounds: what waits for its newline is at most ``maximumLineBytes`` plus one read (tor cuts its
/// messages at 10 KiB, so a line of tor's is never split); once tor has exited, ``finish()`` waits
/// at most ``drainDeadline`` for tor's end of the pipe to close. A log file that blocks (a hung
/// network mount) would block this thread and, once the pipe's 64 KiB are full, tor's logging.
final class TorLogRelay: Sendable {
    static let maximumLineBytes = 16 * 1024
    static let drainDeadline: Duration = .seconds(2)

    /// The path tor opens as its log file.
    let torPath: String
    private let readEnd: Int32
    private let writeEnd: Int32
    private let logFile: Int32
    private let scrubber: Mutex<TorLogScrubber>
    /// Set by ``finish()``: from then on the reader gives up at the deadline even without EOF.
    private let finishing = Mutex<ContinuousClock.Instant?>(nil)
    private let drained = OneShot<Void>()

    init(logFile path: URL, options: [TorOption]) throws(TorCoreError) {
        var ends: [Int32] = [-1, -1]
        guard cspawn_pipe_cloexec(&ends) == 0 else {
            throw TorCoreError(.filesystem, "cannot make a pipe for tor's log: \(SystemCallError(call: "pipe2", number: errno))")
        }
        let file = open(path.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard file >= 0 else {
            let reason = SystemCallError(call: "open", number: errno)
            close(ends[0]); close(ends[1])
            throw TorCoreError(.filesystem, "cannot open tor's log \(path.path): \(reason)")
        }
        // A log left by an older version may have been created with tor's 0640.
        _ = fchmod(file, 0o600)
        readEnd = ends[0]
        writeEnd = ends[1]
        logFile = file
        torPath = "/proc/self/fd/\(ends[1])"
        scrubber = Mutex(TorLogScrubber(options: options))
        let thread = Thread { [self] in relay() }
        thread.name = "tor-log"
        thread.start()
    }

    /// Bridge options given to tor later (SETCONF): their secrets are scrubbed from then on.
    func learn(_ options: [TorOption]) {
        scrubber.withLock { $0.learn(options) }
    }

    /// Call once tor has exited: closes our end of the pipe and waits until every line tor wrote
    /// is in the file (or the deadline passed). Safe to call more than once.
    func finish() async {
        let first = finishing.withLock { deadline -> Bool in
            guard deadline == nil else { return false }
            deadline = .now + Self.drainDeadline
            return true
        }
        if first { close(writeEnd) }
        await drained.wait()
    }

    private func relay() {
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        reading: while true {
            var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 200)
            if ready < 0 && errno != EINTR {
                noteStop(call: "poll", number: errno)
                break
            }
            if ready <= 0 {
                if let deadline = finishing.withLock({ $0 }), ContinuousClock.now >= deadline { break }
                continue
            }
            let count = chunk.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                noteStop(call: "read", number: errno)
                break
            }
            if count == 0 { break reading }
            pending += chunk[0..<count]
            var lineStart = 0
            while let newline = pending[lineStart...].firstIndex(of: UInt8(ascii: "\n")) {
                write(line: pending[lineStart..<newline])
                lineStart = newline + 1
            }
            pending.removeFirst(lineStart)
            if pending.count > Self.maximumLineBytes {
                write(line: pending[...])
                pending.removeAll(keepingCapacity: true)
            }
        }
        if !pending.isEmpty { write(line: pending[...]) }
        close(readEnd)
        close(logFile)
        drained.fulfil(())
    }

    /// tor's later lines will be lost (its writes to the closed pipe fail): say so in the log.
    private func noteStop(call: String, number: Int32) {
        let line = "[postern] tor's log relay stopped (\(SystemCallError(call: call, number: number))); tor's later warnings are not in this file\n"
        _ = try? SystemCall.writeAll(logFile, Array(line.utf8))
    }

    private func write(line: ArraySlice<UInt8>) {
        let text = String(decoding: line, as: UTF8.self)
        let scrubbed = scrubber.withLock { $0.scrub(text) } + "\n"
        // A full disk loses log lines, never tor: tor's writes go to the pipe, which we keep reading.
        _ = try? SystemCall.writeAll(logFile, Array(scrubbed.utf8))
    }
}
