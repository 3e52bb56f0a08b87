import Foundation

/// Runs a program to completion and captures its output. Used to test the built `postern` binary
/// and the repository's scripts as a user would run them.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

public enum ProcessRunner {
    /// Children run at once through this runner, at most: each holds three pipes and a socket
    /// pair in the test process while it runs, and Foundation's Process.run() on Linux (Swift
    /// 6.3.1) can crash once a process holds more than about 1,360 descriptors (scripts/run-tests.sh
    /// says why). The CLI tests started dozens at once; this bound took the shared process's pipes
    /// at its peak from 785 to 544 descriptors (the rest are other suites' peers).
    private static let childSlots = DispatchSemaphore(value: 8)

    /// Runs the program on a thread of its own and awaits it there, not on the cooperative pool.
    ///
    /// The pool has one thread per core (two here), and the tests of a group run in parallel in
    /// one process: a blocking wait for a child (`waitUntilExit`, reading its pipes to the end)
    /// held one of those threads for the child's whole life, and two of them at once stalled every
    /// other test. Deadlines elsewhere then fired late or early in wall time (a stand-in peer timed
    /// out before its test ran again; a 1 s deadline took 14 s).
    ///
    /// A synchronous `@Test` runs on that pool too: tests that ran the `postern` binary through
    /// `runBlocking` (CLITests, PosternTrialsTests) held both threads for most of their suites' run,
    /// and the HTTPS tests of SnowflakeTests beside them took 17.5 s instead of 0.7 s, their TLS
    /// handshake measured in wall time past its 20 s deadline in a full run (issue #24).
    public static func run(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
                           stdin: String? = nil, exitNoticeGrace: TimeInterval = 30) async throws -> ProcessResult {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ProcessResult, any Error>) in
            let thread = Thread {
                continuation.resume(with: Result {
                    try runBlocking(executable, arguments, environment: environment, stdin: stdin, exitNoticeGrace: exitNoticeGrace)
                })
            }
            thread.start()
        }
    }

    /// The same, blocking the calling thread: for synchronous code outside the cooperative pool
    /// (a `deinit`, a thread of its own). Not from a test function, synchronous or not: use `run`.
    /// `exitNoticeGrace`: how long Foundation may take to notice the exit once the output ended
    /// (see `waitForExit`).
    public static func runBlocking(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
                                   stdin: String? = nil, exitNoticeGrace: TimeInterval = 30) throws -> ProcessResult {
        childSlots.wait()
        defer { childSlots.signal() }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let input = Pipe()
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        // Read both pipes concurrently so a chatty child cannot block on a full pipe.
        nonisolated(unsafe) var errData = Data()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async { errData = err.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        let status = waitForExit(process, grace: exitNoticeGrace)
        return ProcessResult(status: status, stdout: String(decoding: outData, as: UTF8.self),
                             stderr: String(decoding: errData, as: UTF8.self))
    }

    /// The child's exit status (the signal's number when a signal ended it), as
    /// `terminationStatus` gives it.
    ///
    /// Foundation on Linux learns of a child's exit only when a socket it hands the child closes,
    /// and the child passes that socket on to whatever it starts in the background (the test
    /// bed's daemons and probe servers). One CI run hung 16 minutes here with the child a zombie:
    /// Foundation never reaped it. So after the child's output has ended, Foundation gets
    /// `grace` (30 s by default) to notice; then the child is reaped here.
    private static func waitForExit(_ process: Process, grace: TimeInterval) -> Int32 {
        let deadline = Date().addingTimeInterval(grace)
        while process.isRunning && Date() < deadline {
            RunLoop.current.run(until: Date(timeIntervalSinceNow: 0.05))
        }
        guard process.isRunning else { return process.terminationStatus }
        var status: Int32 = 0
        while true {
            let reaped = waitpid(process.processIdentifier, &status, 0)
            if reaped == process.processIdentifier { break }
            // Foundation reaped it after all (ECHILD), or a signal interrupted the wait (EINTR).
            if reaped == -1 && errno == EINTR { continue }
            process.waitUntilExit()
            return process.terminationStatus
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : signal
    }

    /// The package root, found from this file's location.
    public static var packageRoot: URL {
        // Tests/Support/PosternTestSupport/ProcessRunner.swift
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
    }

    /// The `postern` binary built next to the test bundle (or $POSTERN_BINARY).
    public static var postern: URL {
        if let explicit = ProcessInfo.processInfo.environment["POSTERN_BINARY"] { return URL(fileURLWithPath: explicit) }
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("postern")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return packageRoot.appendingPathComponent(".build/debug/postern")
    }
}
