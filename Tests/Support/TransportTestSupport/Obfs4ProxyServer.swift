import Foundation
import TransportBase

/// Test and benchmark support: real peers on loopback. Nothing here is used by the product.

public struct HarnessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A child process speaking the PT stdout protocol, with its stdout lines delivered as a stream.
public final class ManagedChildProcess: @unchecked Sendable {
    public let process = Process()
    private let stdinPipe = Pipe()
    private let stdoutPipe = Pipe()
    public let lines: AsyncStream<String>

    /// `standardErrorFile`: where the child's stderr goes (a Go panic lands there); discarded when nil.
    public init(executable: String, arguments: [String] = [], environment: [String: String], standardErrorFile: URL? = nil) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TOR_PT_") }
        for (key, value) in environment { merged[key] = value }
        process.environment = merged
        process.standardInput = stdinPipe
        process.standardOutput = stdoutPipe
        if let standardErrorFile {
            _ = FileManager.default.createFile(atPath: standardErrorFile.path, contents: nil)
            process.standardError = try FileHandle(forWritingTo: standardErrorFile)
        } else {
            process.standardError = FileHandle.nullDevice
        }
        let (stream, continuation) = AsyncStream<String>.makeStream()
        lines = stream
        let handle = stdoutPipe.fileHandleForReading
        let thread = Thread {
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    continuation.yield(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                    pending.removeSubrange(pending.startIndex...newline)
                }
            }
            continuation.finish()
        }
        try process.run()
        thread.start()
    }

    /// Collects lines until one satisfies `isLast`, or fails after `timeout`.
    public func readLines(until isLast: @escaping @Sendable (String) -> Bool, timeout: Duration = .seconds(20)) async throws -> [String] {
        let stream = lines
        return try await withThrowingTaskGroup(of: [String]?.self) { group in
            group.addTask {
                var collected: [String] = []
                for await line in stream {
                    collected.append(line)
                    if isLast(line) { return collected }
                }
                throw HarnessError("the process ended its output after: \(collected)")
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            guard let first = try await group.next(), let result = first else {
                group.cancelAll()
                throw HarnessError("timed out waiting for the process's configuration lines")
            }
            group.cancelAll()
            return result
        }
    }

    /// Closes stdin (a managed PT exits) and makes sure the process is gone.
    public func stop() {
        try? stdinPipe.fileHandleForWriting.close()
        if process.isRunning {
            let deadline = Date().addingTimeInterval(2)
            while process.isRunning && Date() < deadline { usleep(10_000) }
            if process.isRunning { process.terminate() }
        }
        process.waitUntilExit()
    }

    /// User+system CPU seconds of the child so far (Linux /proc).
    public var cpuSeconds: Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state(0) … utime is field 14 overall → index 11 here, stime index 12.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}

/// Debian's obfs4proxy running as a managed obfs4 SERVER on 127.0.0.1, forwarding to `orPort`.
public final class Obfs4ProxyServer: @unchecked Sendable {
    public let child: ManagedChildProcess
    public var process: Process { child.process }
    public let endpoint: TransportEndpoint
    /// The bridge-line arguments from its SMETHOD line (`cert=…;iat-mode=N`).
    public let arguments: TransportArguments
    public let stateDirectory: URL

    public static let executable = "/usr/bin/obfs4proxy"

    public init(orPort: UInt16, iatMode: Int) async throws {
        stateDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-obfs4-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: stateDirectory, withIntermediateDirectories: true)
        // Its log (obfs4proxy.log in the state directory) says why it closed a connection.
        child = try ManagedChildProcess(executable: Self.executable, arguments: ["-enableLogging", "-logLevel", "INFO"], environment: [
            "TOR_PT_MANAGED_TRANSPORT_VER": "1",
            "TOR_PT_SERVER_TRANSPORTS": "obfs4",
            "TOR_PT_SERVER_BINDADDR": "obfs4-127.0.0.1:0",
            "TOR_PT_ORPORT": "127.0.0.1:\(orPort)",
            "TOR_PT_STATE_LOCATION": stateDirectory.path + "/",
            "TOR_PT_EXIT_ON_STDIN_CLOSE": "1",
            "TOR_PT_SERVER_TRANSPORT_OPTIONS": "obfs4:iat-mode=\(iatMode)",
        ], standardErrorFile: stateDirectory.appendingPathComponent("stderr.txt"))
        let lines = try await child.readLines(until: { $0 == "SMETHODS DONE" || $0.hasPrefix("SMETHOD-ERROR") || $0.hasPrefix("ENV-ERROR") })
        guard let smethod = lines.first(where: { $0.hasPrefix("SMETHOD obfs4 ") }) else {
            child.stop()
            throw HarnessError("obfs4proxy did not start: \(lines)")
        }
        // SMETHOD obfs4 127.0.0.1:PORT ARGS:cert=…,iat-mode=N
        let words = smethod.split(separator: " ")
        guard words.count >= 4, words[3].hasPrefix("ARGS:") else { throw HarnessError("unexpected line: \(smethod)") }
        endpoint = try TransportEndpoint(parsing: String(words[2]))
        let pairs = words[3].dropFirst(5).split(separator: ",").map { pair -> TransportArguments.Pair in
            let parts = pair.split(separator: "=", maxSplits: 1)
            return TransportArguments.Pair(key: String(parts[0]), value: parts.count > 1 ? String(parts[1]) : "")
        }
        arguments = TransportArguments(pairs)
    }

    /// The bridge line obfs4proxy wrote to its state directory.
    public var bridgeLine: String? {
        try? String(contentsOf: stateDirectory.appendingPathComponent("obfs4_bridgeline.txt"), encoding: .utf8)
            .split(separator: "\n").last { $0.hasPrefix("Bridge obfs4") }.map(String.init)
    }

    /// What obfs4proxy logged so far (why it closed a connection, for instance), then its stderr.
    public var log: String {
        let log = (try? String(contentsOf: stateDirectory.appendingPathComponent("obfs4proxy.log"), encoding: .utf8)) ?? ""
        let standardError = (try? String(contentsOf: stateDirectory.appendingPathComponent("stderr.txt"), encoding: .utf8)) ?? ""
        return standardError.isEmpty ? log : log + "\n--- stderr ---\n" + standardError
    }

    /// obfs4proxy 0.0.14 in iat-mode=2 panics ("BUG: Write(), iat length was 0") when its length
    /// distribution draws 0 for a write: `frameBuf.Read(iatFrame[:0])` reads nothing. The draw
    /// can only happen when 0 is among the distribution's values, which depend on the server's
    /// random seed, so a few percent of fresh iat-mode=2 servers crash on their first long write.
    public var diedOfParanoidZeroLengthBug: Bool {
        !process.isRunning && log.contains("BUG: Write(), iat length was 0")
    }

    public func stop() {
        child.stop()
        try? FileManager.default.removeItem(at: stateDirectory)
    }
}

/// A loopback TCP server standing in for the bridge's ORPort: echoes or discards what it reads.
public final class LoopbackPeer: @unchecked Sendable {
    public enum Behaviour: Sendable { case echo, sink, silent }
    private let listener: LoopbackListener
    private let acceptTask: Task<Void, Never>
    public var port: UInt16 { listener.port }

    public init(_ behaviour: Behaviour, onBytes: (@Sendable (Int) -> Void)? = nil) throws {
        let listener = try LoopbackListener()
        self.listener = listener
        acceptTask = Task {
            await withDiscardingTaskGroup { group in
                while let connection = try? await listener.accept() {
                    group.addTask {
                        do {
                            while true {
                                let bytes = try await connection.read(maximumCount: 65536)
                                if bytes.isEmpty { break }
                                onBytes?(bytes.count)
                                if behaviour == .echo { try await connection.write(bytes) }
                            }
                            await connection.closeWrite()
                        } catch {}
                        connection.close()
                    }
                }
            }
        }
    }

    public func stop() {
        listener.close()
        acceptTask.cancel()
    }
}
