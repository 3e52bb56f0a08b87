import PosternRuntime
import BridgeConfig
import Foundation

/// One line of a child's `--events-json` file (see RunEventLog for the format).
struct RunEvent: Codable, Sendable, Equatable {
    var t: Double
    var wall: Double
    var event: String
    var progress: Int?
    var tag: String?
    var summary: String?
    var warning: String?
    var source: String?
    var kind: String?
    var transport: String?
    var message: String?
    var socks: String?
    var route: String?
    var pid: Int?

    /// Parses the complete lines of an events file; a torn last line (still being written) is left
    /// for the next read.
    static func parse(_ text: String) -> [RunEvent] {
        let decoder = JSONDecoder()
        return text.split(separator: "\n", omittingEmptySubsequences: true).compactMap { line in
            try? decoder.decode(RunEvent.self, from: Data(line.utf8))
        }
    }
}

/// A child `postern run` started by this process (tor_api allows one tor per process, so every
/// trial and every bootstrap check is its own process): its own settings directory holding only
/// the bridges it may use (so no bridge line appears on a command line, where `ps` would show it),
/// its own data directory, SOCKS port and events file. Stopped with SIGTERM, then SIGKILL.
final class ChildRun: @unchecked Sendable {
    struct Setup: Sendable {
        var directory: URL
        /// "direct" or a transport name given to the child's `--transport`.
        var transport: String
        /// Bridge lines stored in the child's settings (none for direct; empty for a transport
        /// means the child falls back to its built-in bridges).
        var bridges: [BridgeLine]
        /// External transports stored in the child's settings with the bridges (for `plugin:NAME`
        /// routes, marked as replacing Postern's own transport of that name).
        var plugins: [TransportPlugin] = []
        var socksPort: UInt16
        var torOptionsFile: String?
        var unsafeLogging: Bool
        /// Cached directory files copied into the data directory before start (warm start).
        var warmFrom: URL?
    }

    let setup: Setup
    let process = Process()
    var configDirectory: URL { setup.directory.appendingPathComponent("config") }
    var dataDirectory: URL { setup.directory.appendingPathComponent("tor") }
    var eventsFile: URL { setup.directory.appendingPathComponent("events.jsonl") }
    var logFile: URL { setup.directory.appendingPathComponent("child.log") }

    init(_ setup: Setup) throws {
        self.setup = setup
        let manager = FileManager.default
        try manager.createDirectory(at: setup.directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try manager.createDirectory(at: dataDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if !setup.bridges.isEmpty || !setup.plugins.isEmpty {
            let store = try BridgeStore(directory: configDirectory.path)
            try store.update { configuration in
                for line in setup.bridges { _ = try configuration.add(line) }
                for plugin in setup.plugins { try configuration.addPlugin(plugin) }
            }
        }
        if let warmFrom = setup.warmFrom { Self.copyCachedDirectory(from: warmFrom, to: dataDirectory) }
        guard manager.createFile(atPath: logFile.path, contents: nil, attributes: [.posixPermissions: 0o600]),
              manager.createFile(atPath: eventsFile.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw CommandFailure("cannot create files in \(setup.directory.path)")
        }
        var arguments = ["run", "--config-dir", configDirectory.path, "--data-dir", dataDirectory.path,
                         "--socks", "127.0.0.1:\(setup.socksPort)", "--transport", setup.transport,
                         "--events-json", eventsFile.path, "--json"]
        if let file = setup.torOptionsFile { arguments += ["--tor-options-file", file] }
        if setup.unsafeLogging { arguments.append("--unsafe-logging") }
        process.executableURL = URL(fileURLWithPath: Self.executablePath)
        process.arguments = arguments
        let log = try FileHandle(forWritingTo: logFile)
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try? log.close()
    }

    /// Our own binary, so the children are the same build as the parent.
    static var executablePath: String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if count > 0 { return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        return CommandLine.arguments[0]
    }

    var events: [RunEvent] {
        RunEvent.parse((try? String(contentsOf: eventsFile, encoding: .utf8)) ?? "")
    }

    var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    enum Outcome: Sendable {
        case ready
        /// The child reported a failure or exited before 100 %.
        case failed(String)
        case timedOut
    }

    /// Follows the events file until the child is ready, fails, exits or `timeout` passes.
    /// `onEvents` sees the events so far whenever new ones arrive (for a live view).
    func waitForReady(timeout: Duration, onEvents: @Sendable ([RunEvent]) -> Void = { _ in }) async -> Outcome {
        let started = ContinuousClock.now
        var seen = 0
        while true {
            let current = events
            if current.count != seen {
                seen = current.count
                onEvents(current)
            }
            if current.contains(where: { $0.event == "ready" }) { return .ready }
            if let failure = current.last(where: { $0.event == "failed" }) {
                return .failed(failure.message ?? "tor failed")
            }
            if !process.isRunning {
                let tail = log.split(separator: "\n").last { $0.contains("error") }.map(String.init)
                return .failed("the child exited with status \(process.terminationStatus)" + (tail.map { ": \($0)" } ?? ""))
            }
            if ContinuousClock.now - started >= timeout { return .timedOut }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// SIGTERM (a clean tor shutdown), SIGKILL after `grace`.
    func stop(grace: Duration = .seconds(5)) async {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let started = ContinuousClock.now
        while process.isRunning, ContinuousClock.now - started < grace {
            try? await Task.sleep(for: .milliseconds(50))
        }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Removes what the child needs no more: its settings (bridge lines) and tor's data directory.
    /// The events file and the child's output stay.
    func cleanUp() {
        try? FileManager.default.removeItem(at: configDirectory)
        try? FileManager.default.removeItem(at: dataDirectory)
    }

    /// tor's cached directory documents (consensus, certificates, descriptors): what makes a start warm.
    static func copyCachedDirectory(from source: URL, to destination: URL) {
        let manager = FileManager.default
        guard let names = try? manager.contentsOfDirectory(atPath: source.path) else { return }
        try? manager.createDirectory(at: destination, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        for name in names where name.hasPrefix("cached-") {
            let target = destination.appendingPathComponent(name)
            try? manager.removeItem(at: target)
            try? manager.copyItem(at: source.appendingPathComponent(name), to: target)
        }
    }

    /// A loopback TCP port free right now (bound and released; the child binds it moments later).
    static func freePort() throws -> UInt16 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw CommandFailure("cannot open a socket: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0 else { throw CommandFailure("cannot find a free port: \(String(cString: strerror(errno)))") }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else { throw CommandFailure("cannot find a free port: \(String(cString: strerror(errno)))") }
        return UInt16(bigEndian: address.sin_port)
    }
}
