import Foundation
import Testing

/// Debian's dumpcap writing a pcapng file, for the leak proofs. Started with the signal mask
/// unblocked (the test process blocks SIGTERM/SIGINT and children inherit the mask), stopped with
/// SIGINT so that it flushes the file.
final class Dumpcap: @unchecked Sendable {
    let file: URL
    let log: URL
    private let process = Process()

    /// `capture`: dumpcap's interface and filter arguments, e.g. `["-i", "lo", "-f", "port 53"]`.
    init(capture: [String], file: URL, log: URL) throws {
        self.file = file
        self.log = log
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c",
                             "import os,signal,sys; signal.pthread_sigmask(signal.SIG_UNBLOCK, signal.valid_signals()); os.execvp(sys.argv[1], sys.argv[1:])",
                             "dumpcap"] + capture + ["-w", file.path, "-P", "-q"]
        process.standardError = try FileHandle(forWritingTo: log)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
    }

    var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    func waitUntilCapturing() async throws {
        for _ in 0..<100 {
            if logText.contains("Capturing on") { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("dumpcap did not start: \(logText)")
    }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGINT) }
        process.waitUntilExit()
    }
}
