import Foundation

/// A peer program we did not write (a Python server on loopback), with its stdout collected line by
/// line. Terminated and reaped in deinit-free `stop()`, which tests call in a defer.
public final class PeerProcess: @unchecked Sendable {
    private let process = Process()
    private let lock = NSLock()
    private var lines: [String] = []
    private var partial = Data()

    public static var peersDirectory: URL { URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Peers") }

    /// `account`: run as that account (the system's python3, given the script's text, so that
    /// neither the checkout nor the test user's python need be readable to it).
    public init(script: String, arguments: [String], account: OtherLocalAccount? = nil) throws {
        let path = Self.peersDirectory.appendingPathComponent(script).path
        if let account {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = account.commandLine(["/usr/bin/python3", "-u", "-c", try String(contentsOfFile: path, encoding: .utf8)] + arguments)
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-u", path] + arguments
        }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        out.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.lock()
            self.partial.append(data)
            while let newline = self.partial.firstIndex(of: 0x0A) {
                self.lines.append(String(decoding: self.partial[self.partial.startIndex..<newline], as: UTF8.self))
                self.partial.removeSubrange(self.partial.startIndex...newline)
            }
            self.lock.unlock()
        }
        try process.run()
    }

    public var processIdentifier: Int32 { process.processIdentifier }

    public var output: [String] {
        lock.lock()
        defer { lock.unlock() }
        return lines
    }

    /// Waits for a line starting with `prefix` and returns its remainder.
    ///
    /// The output is looked at once more after the deadline or the peer's exit: on a loaded
    /// machine this task may not run again until well after the deadline (other tests' blocking
    /// waits hold the cooperative threads), and the line that came meanwhile counts. Without that
    /// last look, tests failed with "never printed 'PORT '" next to an output showing the line.
    public func waitForLine(prefix: String, timeout: Double = 20) async throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        func found() -> String? { output.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) } }
        while Date() < deadline, process.isRunning {
            if let line = found() { return line }
            try await Task.sleep(for: .milliseconds(50))
        }
        if let line = found() { return line }
        throw PeerError(message: "peer never printed '\(prefix)'; output: \(output)")
    }

    public func port() async throws -> UInt16 {
        let text = try await waitForLine(prefix: "PORT ")
        guard let port = UInt16(text) else { throw PeerError(message: "bad port line \(text)") }
        return port
    }

    public func stop() {
        // SIGKILL: the test process blocks SIGTERM and its children inherit the mask.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    public struct PeerError: Error, CustomStringConvertible {
        let message: String
        public var description: String { message }
    }
}
