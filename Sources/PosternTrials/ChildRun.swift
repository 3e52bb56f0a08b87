import BridgeConfig
import Foundation
import PosternLinkSpec
import Synchronization

/// A child `postern run` (tor_api allows one tor per process, so every trial and every bootstrap
/// check is its own process): its own settings directory holding only the bridges it may use (so
/// no bridge line appears on a command line, where `ps` would show it), its own data directory,
/// SOCKS port and events file. Stopped with SIGTERM, then SIGKILL.
///
/// The child binds its SOCKS port itself (`--socks 127.0.0.1:auto`) and names the port it got in
/// its `ready` event: a port chosen here and bound there could be taken by another program in
/// between (it was, in CI: "127.0.0.1:40001 is already in use"), and the route would be blamed.
public final class ChildRun: @unchecked Sendable {
    public struct Setup: Sendable {
        public var directory: URL
        /// "direct" or a transport name given to the child's `--transport`.
        public var transport: String
        /// Bridge lines stored in the child's settings (none for direct; empty for a transport
        /// means the child falls back to its built-in bridges).
        public var bridges: [BridgeLine]
        /// External transports stored in the child's settings with the bridges (for `plugin:NAME`
        /// routes, marked as replacing Postern's own transport of that name).
        public var plugins: [TransportPlugin]
        public var torOptionsFile: String?
        public var unsafeLogging: Bool
        /// Cached directory files copied into the data directory before start (warm start).
        public var warmFrom: URL?
        /// The `postern` binary to run (the same build as the caller, normally).
        public var executable: URL
        /// The child's `--socks`: `127.0.0.1:auto` unless a test plants a fixed one.
        public var socks: String

        public init(directory: URL, transport: String, bridges: [BridgeLine], plugins: [TransportPlugin] = [],
                    torOptionsFile: String? = nil, unsafeLogging: Bool = false, warmFrom: URL? = nil,
                    executable: URL = ChildRun.currentExecutable, socks: String = "127.0.0.1:auto") {
            self.directory = directory
            self.transport = transport
            self.bridges = bridges
            self.plugins = plugins
            self.torOptionsFile = torOptionsFile
            self.unsafeLogging = unsafeLogging
            self.warmFrom = warmFrom
            self.executable = executable
            self.socks = socks
        }
    }

    public let setup: Setup
    let process = Process()
    /// Set when we signalled the child, so its death by that signal is not taken for a crash.
    private let stopRequested = Mutex(false)
    public var configDirectory: URL { setup.directory.appendingPathComponent("config") }
    public var dataDirectory: URL { setup.directory.appendingPathComponent("tor") }
    public var eventsFile: URL { setup.directory.appendingPathComponent("events.jsonl") }
    public var logFile: URL { setup.directory.appendingPathComponent("child.log") }

    /// Prepares the child's directory and starts it. Every error here is the harness's (the
    /// route has not been touched yet): code `filesystem` or `spawn`.
    public init(_ setup: Setup) throws(TrialError) {
        self.setup = setup
        let manager = FileManager.default
        do {
            try manager.createDirectory(at: setup.directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try manager.createDirectory(at: dataDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            if !setup.bridges.isEmpty || !setup.plugins.isEmpty {
                // A fresh directory: nothing stored to read back, and the lines were checked by the
                // caller; the child reads them with Postern's full rules.
                let store = try BridgeStore(directory: configDirectory.path, rules: .syntaxOnly)
                try store.update { configuration in
                    for line in setup.bridges { _ = try configuration.add(line) }
                    for plugin in setup.plugins { try configuration.addPlugin(plugin) }
                }
            }
        } catch {
            throw TrialError(.filesystem, "cannot prepare the child's directory \(setup.directory.path): \(error)")
        }
        if let warmFrom = setup.warmFrom { Self.copyCachedDirectory(from: warmFrom, to: dataDirectory) }
        guard manager.createFile(atPath: logFile.path, contents: nil, attributes: [.posixPermissions: 0o600]),
              manager.createFile(atPath: eventsFile.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw TrialError(.filesystem, "cannot create files in \(setup.directory.path)")
        }
        var arguments = ["run", "--config-dir", configDirectory.path, "--data-dir", dataDirectory.path,
                         "--socks", setup.socks, "--transport", setup.transport,
                         "--events-json", eventsFile.path, "--json"]
        if let file = setup.torOptionsFile { arguments += ["--tor-options-file", file] }
        if setup.unsafeLogging { arguments.append("--unsafe-logging") }
        process.executableURL = setup.executable
        process.arguments = arguments
        do {
            let log = try FileHandle(forWritingTo: logFile)
            process.standardOutput = log
            process.standardError = log
            process.standardInput = FileHandle.nullDevice
            try process.run()
            try? log.close()
        } catch {
            throw TrialError(.spawn, "cannot start \(setup.executable.path): \(error)")
        }
    }

    /// This process's own binary, so that children are the same build as the parent.
    public static var currentExecutable: URL {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if count > 0 { return URL(fileURLWithPath: String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)) }
        return URL(fileURLWithPath: CommandLine.arguments[0])
    }

    public var events: [RunEvent] {
        RunEvent.parse((try? String(contentsOf: eventsFile, encoding: .utf8)) ?? "")
    }

    public var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    public enum Outcome: Sendable, Equatable {
        /// 100 %, with the loopback SOCKS port the child bound.
        case ready(socksPort: UInt16)
        /// The child reported a failure or exited before 100 %. `harness` is set when the cause is
        /// not the route's (the child could not start its core, crashed, or misbehaved).
        case failed(reason: String, harness: ABResult.HarnessError.Code?)
        case timedOut
    }

    /// Codes of the child's `failed` event that are about the machine or the configuration the
    /// harness gave, never about the network: a SOCKS port in use, a data directory it cannot
    /// write, a second core in one process.
    static let harnessFailureCodes: Set<String> = ["invalid-configuration", "filesystem", "already-running", "ffi-failure"]

    /// Follows the events file until the child is ready, fails, exits or `timeout` passes.
    /// `onEvents` sees the events so far whenever new ones arrive (for a live view).
    public func waitForReady(timeout: Duration, onEvents: @Sendable ([RunEvent]) -> Void = { _ in }) async -> Outcome {
        let started = ContinuousClock.now
        var seen = 0
        while true {
            let current = events
            if current.count != seen {
                seen = current.count
                onEvents(current)
            }
            if let ready = current.first(where: { $0.event == "ready" }) {
                guard let port = ready.socks.flatMap(Self.port(ofEndpoint:)) else {
                    return .failed(reason: "the child's ready event names no SOCKS port (\(ready.socks ?? "none"))", harness: .noSocksPort)
                }
                return .ready(socksPort: port)
            }
            if let failure = current.last(where: { $0.event == "failed" }) {
                let reason = failure.message ?? "tor failed"
                let harness = failure.code.map { Self.harnessFailureCodes.contains($0) } ?? false
                return .failed(reason: reason, harness: harness ? .childConfiguration : nil)
            }
            if !process.isRunning {
                return exitedOutcome(events: current)
            }
            if ContinuousClock.now - started >= timeout { return .timedOut }
            // Cancelled (the user interrupted `bridges test`): the caller stops the child. Without
            // this the loop would spin, its sleep returning at once, until the timeout.
            if Task.isCancelled { return .failed(reason: "stopped before 100%: the check was cancelled", harness: nil) }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// The child exited on its own before 100 % without saying why in its events.
    private func exitedOutcome(events: [RunEvent]) -> Outcome {
        let status = process.terminationStatus
        let tail = log.split(separator: "\n").last { $0.contains("error") }.map { ": \($0)" } ?? ""
        if process.terminationReason == .uncaughtSignal && !stopRequested.withLock({ $0 }) {
            return .failed(reason: "the child died of signal \(status)\(tail)", harness: .childCrashed)
        }
        // 64: the child refused its command line, which the harness wrote.
        if status == 64 { return .failed(reason: "the child refused its arguments (exit status 64)\(tail)", harness: .childUsage) }
        if !events.contains(where: { $0.event == "start" }) {
            return .failed(reason: "the child exited with status \(status) before it started\(tail)", harness: .childStart)
        }
        return .failed(reason: "the child exited with status \(status)\(tail)", harness: nil)
    }

    /// SIGTERM (a clean tor shutdown), SIGKILL after `grace`.
    public func stop(grace: Duration = .seconds(5)) async {
        guard process.isRunning else { return }
        stopRequested.withLock { $0 = true }
        await process.stop(grace: grace)
    }

    /// Removes what the child needs no more: its settings (bridge lines) and tor's data directory.
    /// The events file and the child's output stay.
    public func cleanUp() {
        try? FileManager.default.removeItem(at: configDirectory)
        try? FileManager.default.removeItem(at: dataDirectory)
    }

    /// tor's cached directory documents (consensus, certificates, descriptors): what makes a start warm.
    public static func copyCachedDirectory(from source: URL, to destination: URL) {
        let manager = FileManager.default
        guard let names = try? manager.contentsOfDirectory(atPath: source.path) else { return }
        try? manager.createDirectory(at: destination, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        for name in names where name.hasPrefix("cached-") {
            let target = destination.appendingPathComponent(name)
            try? manager.removeItem(at: target)
            try? manager.copyItem(at: source.appendingPathComponent(name), to: target)
        }
    }

    /// The port of "HOST:PORT" or "[HOST]:PORT" as the child reports it; nil for anything else.
    static func port(ofEndpoint text: String) -> UInt16? {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]), port != 0 else { return nil }
        return port
    }
}
