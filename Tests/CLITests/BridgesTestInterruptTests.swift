import PosternTestSupport
import Foundation
import Testing

/// `postern bridges test --bootstrap` interrupted by the user: the bootstrap children (real
/// `postern run`s) are stopped and the work directory holding their bridge lines is removed.
@Suite struct BridgesTestInterruptTests {
    static let fingerprint = "4055D774FDDBDD7FB9650EA0C2BB562E548798D4"

    @Test(arguments: [SIGTERM, SIGINT])
    func interruptedBootstrapLeavesNothingBehind(_ signalNumber: Int32) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("postern-bt-interrupt-\(UUID())")
        let config = root.appendingPathComponent("config"), temporary = root.appendingPathComponent("tmp")
        try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer {
            // Whatever the outcome, no process of this test outlives it.
            for pid in Self.processes(mentioning: root.path) { kill(pid, SIGKILL) }
            try? FileManager.default.removeItem(at: root)
        }
        // A bridge that accepts TCP and never answers: the child's tor waits on it.
        let silent = try HeldLoopbackPort()
        let added = try await ProcessRunner.run(ProcessRunner.postern,
                                                  ["bridges", "add", "127.0.0.1:\(silent.port) \(Self.fingerprint)", "--config-dir", config.path])
        try #require(added.status == 0, "\(added.stderr)")

        let parent = Process()
        parent.executableURL = ProcessRunner.postern
        parent.arguments = ["bridges", "test", "--bootstrap", "--bootstrap-timeout", "600", "--config-dir", config.path]
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = temporary.path  // where the batch makes its work directory
        parent.environment = environment
        parent.standardInput = FileHandle.nullDevice
        parent.standardOutput = FileHandle.nullDevice
        parent.standardError = FileHandle.nullDevice
        try parent.run()

        // The bootstrap child has started once its events file has its first line.
        let started = await Self.waitUntil(seconds: 120) {
            Self.childEventFiles(in: temporary).contains { ((try? String(contentsOf: $0, encoding: .utf8)) ?? "").contains("\"start\"") }
        }
        try #require(started, "no bootstrap child started; work directory: \(Self.listing(temporary))")
        let children = Self.processes(mentioning: temporary.path)
        try #require(!children.isEmpty, "the child is found by its --config-dir")

        kill(parent.processIdentifier, signalNumber)
        let exited = await Self.waitUntil(seconds: 60) { !parent.isRunning }
        #expect(exited, "postern bridges test did not exit after signal \(signalNumber)")
        #expect(Self.listing(temporary).isEmpty, "left in the temporary directory: \(Self.listing(temporary))")
        #expect(children.filter { kill($0, 0) == 0 }.isEmpty, "bootstrap children left running")
    }

    static func childEventFiles(in temporary: URL) -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? []
        return names.map { temporary.appendingPathComponent($0).appendingPathComponent("bridge-1/events.jsonl") }
    }

    static func listing(_ directory: URL) -> [String] {
        (FileManager.default.enumerator(atPath: directory.path)?.allObjects as? [String]) ?? []
    }

    /// Processes whose command line mentions `text` (as pgrep -f), by PID, read from /proc: no child
    /// process, so it can run in a `defer` and never blocks the cooperative pool.
    static func processes(mentioning text: String) -> [Int32] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return names.compactMap { name -> Int32? in
            guard let pid = Int32(name), pid != getpid(),
                  let data = FileManager.default.contents(atPath: "/proc/\(name)/cmdline") else { return nil }
            let commandLine = String(decoding: data.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
            return commandLine.contains(text) ? pid : nil
        }
    }

    /// Polls `condition` until it holds or `seconds` pass (no event tells of a file being written).
    static func waitUntil(seconds: Int, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return condition()
    }
}
