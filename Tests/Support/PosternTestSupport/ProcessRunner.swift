import Foundation

/// Runs a program to completion and captures its output. Used to test the built `postern` binary
/// and the repository's scripts as a user would run them.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

public enum ProcessRunner {
    /// Runs the program on a thread of its own and awaits it there, not on the cooperative pool.
    ///
    /// The pool has one thread per core (two here), and the tests of a group run in parallel in
    /// one process: a blocking wait for a child (`waitUntilExit`, reading its pipes to the end)
    /// held one of those threads for the child's whole life, and two of them at once stalled every
    /// other test. Deadlines elsewhere then fired late or early in wall time (a stand-in peer timed
    /// out before its test ran again; a 1 s deadline took 14 s).
    public static func run(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
                           stdin: String? = nil) async throws -> ProcessResult {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ProcessResult, any Error>) in
            let thread = Thread {
                continuation.resume(with: Result { try runBlocking(executable, arguments, environment: environment, stdin: stdin) })
            }
            thread.start()
        }
    }

    /// The same, blocking the calling thread: for synchronous code outside the cooperative pool.
    public static func runBlocking(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
                                   stdin: String? = nil) throws -> ProcessResult {
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
        process.waitUntilExit()
        return ProcessResult(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                             stderr: String(decoding: errData, as: UTF8.self))
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
