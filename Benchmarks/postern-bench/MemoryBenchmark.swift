// `postern-bench memory`: resident memory after bootstrapping through the test bed's obfs4 bridge
// and fetching a page, for `postern run` (tor in-process, our obfs4 client in-process) against a
// stock Debian tor with Debian's obfs4proxy as its managed transport, through the same bridge and
// the same base torrc, in one run. Run it inside the test bed:
//
//   scripts/testbed exec --dir DIR .build/release/postern-bench memory
//
// (scripts/bench.sh does, as part of `make bench`.) The postern binary is $POSTERN_BINARY or the
// `postern` next to this benchmark (so `.build/release/postern`, the `make build` binary).
// RSS is VmRSS from /proc, read one second after the page arrived; for the stock pair it is tor's
// plus obfs4proxy's. Resident pages of file mappings count (that is what RSS is); the breakdown
// says how much of each figure is the executable's own file pages, shared libraries and anonymous
// memory (heap, stacks), from /proc/PID/smaps.
import Foundation
import Synchronization
import TransportBase
import TransportWire

struct MemoryBenchmarkError: Error, CustomStringConvertible { let description: String }

/// Resident set of one process from /proc/PID/smaps, grouped.
struct ResidentBreakdown {
    var total = 0            // KiB
    var executable = 0       // file pages of the main executable
    var sharedLibraries = 0  // file pages of .so mappings
    var anonymous = 0        // heap, stacks, anonymous mmaps (also dirtied pages of file mappings)
    var libraryCount = 0

    init(pid: Int32) throws {
        guard let smaps = readProcFile("/proc/\(pid)/smaps"),
              let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe") else {
            throw MemoryBenchmarkError(description: "cannot read /proc/\(pid)/smaps")
        }
        var path = ""
        var libraries = Set<String>()
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            if first.contains("-") && !first.hasSuffix(":") {
                path = fields.count > 5 ? String(fields[5]) : ""
                if path.contains(".so") { libraries.insert(path) }
                continue
            }
            guard fields.count >= 2, let kib = Int(fields[1]) else { continue }
            switch first {
            case "Rss:":
                total += kib
                if path == exe { executable += kib } else if path.contains(".so") { sharedLibraries += kib }
            case "Anonymous:":
                anonymous += kib
                if path == exe { executable -= kib } else if path.contains(".so") { sharedLibraries -= kib }
            default: break
            }
        }
        libraryCount = libraries.count
        // The kernel's counter and the sum over the mappings agree to a few percent; more means
        // smaps was not read whole (as happened before readProcFile) and the figure is wrong.
        if let counted = residentKiB(pid), abs(counted - total) * 10 > counted {
            throw MemoryBenchmarkError(description: "smaps of \(pid) sums to \(total) KiB but VmRSS is \(counted) KiB")
        }
    }

    static func + (a: Self, b: Self) -> Self {
        var sum = a
        sum.total += b.total; sum.executable += b.executable; sum.sharedLibraries += b.sharedLibraries
        sum.anonymous += b.anonymous; sum.libraryCount += b.libraryCount
        return sum
    }

    var summary: String {
        "\(mb(total)) MB (executable \(mb(executable)), \(libraryCount) shared libraries \(mb(sharedLibraries)), anonymous \(mb(anonymous)))"
    }
}

/// The whole of a /proc file. `String(contentsOfFile:)` trusts the size stat reports, which is 0
/// for /proc files, and returned only the first part of smaps: the breakdown then summed a few
/// mappings (tor "3.3 MB", no shared libraries) instead of the process.
func readProcFile(_ path: String) -> String? {
    guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
    defer { try? handle.close() }
    guard let data = try? handle.readToEnd() else { return nil }
    return String(decoding: data, as: UTF8.self)
}

/// VmRSS of /proc/PID/status in KiB: the kernel's own total, to check the smaps sum against.
func residentKiB(_ pid: Int32) -> Int? {
    readProcFile("/proc/\(pid)/status")?.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
        .flatMap { $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first }.flatMap { Int($0) }
}

func mb(_ kib: Int) -> String { format(Double(kib) / 1024, 1) }

/// Direct children of `pid` (every thread's list).
func childProcesses(of pid: Int32) -> [Int32] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    return tasks.flatMap { task in
        (readProcFile("/proc/\(pid)/task/\(task)/children") ?? "")
            .split(separator: " ").compactMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }
}

/// GET / from the test bed's web server through a SOCKS5 proxy; true when the marker came back.
/// Each attempt has 20 s (a stream tor has no circuit for yet can wait without an answer), on a
/// fresh circuit each time (new SOCKS credentials), four attempts.
func fetchMarkerPage(socks: TransportEndpoint, environment: [String: String]) async throws -> Bool {
    var lastError: Error?
    for attempt in 1...4 {
        do {
            return try await fetchMarkerPageOnce(socks: socks, environment: environment, isolation: "memory-bench-\(attempt)")
        } catch {
            lastError = error
        }
    }
    throw MemoryBenchmarkError(description: "no page through \(socks) in four attempts: \(lastError.map { "\($0)" } ?? "")")
}

func fetchMarkerPageOnce(socks: TransportEndpoint, environment: [String: String], isolation: String) async throws -> Bool {
    guard let url = environment["TB_HTTP_URL"], let marker = environment["TB_HTTP_MARKER"],
          let authority = url.split(separator: "/").dropFirst().first else {
        throw MemoryBenchmarkError(description: "TB_HTTP_URL/TB_HTTP_MARKER missing")
    }
    let target = try TransportEndpoint(parsing: String(authority))
    let holder = Mutex<TCPSocket?>(nil)
    return try await withDeadline(.seconds(20), expired: { holder.withLock { $0?.close() } }) {
        // The socket is known to the deadline as soon as it is connected, so a SOCKS request tor
        // never answers is cut off too.
        let socket = try await socksConnect(via: socks, to: target, arguments: isolation) { socket in holder.withLock { $0 = socket } }
        defer { socket.close() }
        try await socket.write(Array("GET / HTTP/1.0\r\nHost: \(authority)\r\n\r\n".utf8))
        var page: [UInt8] = []
        while page.count < 1 << 20 {
            let chunk = try await socket.read(maximumCount: 65536)
            if chunk.isEmpty { break }
            page += chunk
        }
        return String(decoding: page, as: UTF8.self).contains(marker)
    }
}

/// Runs `executable arguments` to completion with `input` on stdin; throws unless it exits 0.
func runToCompletion(_ executable: String, _ arguments: [String], input: String = "") throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let stdin = Pipe()
    process.standardInput = stdin
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    stdin.fileHandleForWriting.write(Data(input.utf8))
    try stdin.fileHandleForWriting.close()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw MemoryBenchmarkError(description: "\(URL(fileURLWithPath: executable).lastPathComponent) \(arguments.dropFirst(2).first ?? "") exited \(process.terminationStatus)")
    }
}

func waitFor(_ what: String, timeout: Duration, _ done: () throws -> Bool) async throws {
    let started = ContinuousClock.now
    while ContinuousClock.now - started < timeout {
        if try done() { return }
        try await Task.sleep(for: .milliseconds(100))
    }
    throw MemoryBenchmarkError(description: "timed out waiting for \(what)")
}

/// `postern run` through the obfs4 bridge: RSS after bootstrap and one page.
func measurePosternRun(postern: String, environment: [String: String]) async throws -> ResidentBreakdown {
    guard let bridge = environment["TB_BRIDGE_OBFS4"], let torrc = environment["TB_CLIENT_TORRC"] else {
        throw MemoryBenchmarkError(description: "run inside the test bed: scripts/testbed exec --dir DIR postern-bench memory")
    }
    let config = FileManager.default.temporaryDirectory.appendingPathComponent("postern-bench-mem-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    defer { try? FileManager.default.removeItem(at: config) }
    try runToCompletion(postern, ["--config-dir", config.path, "bridges", "add", "-"], input: "Bridge \(bridge)\n")
    try runToCompletion(postern, ["--config-dir", config.path, "transport", "use", "obfs4"])
    let logURL = config.appendingPathComponent("run.log")
    _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: postern)
    process.arguments = ["--config-dir", config.path, "run", "--tor-options-file", torrc]
    let log = try FileHandle(forWritingTo: logURL)
    process.standardOutput = log
    process.standardError = log
    process.standardInput = FileHandle.nullDevice
    try process.runWithDefaultSignalMask()
    do {
        let breakdown = try await measureReadyPostern(process, logURL: logURL, environment: environment)
        await process.stop()
        return breakdown
    } catch {
        await process.stop()
        throw error
    }
}

private func measureReadyPostern(_ process: Process, logURL: URL, environment: [String: String]) async throws -> ResidentBreakdown {
    var socks: TransportEndpoint?
    try await waitFor("postern run to be ready", timeout: .seconds(120)) {
        guard process.isRunning else { throw MemoryBenchmarkError(description: "postern run exited \(process.terminationStatus)") }
        let text = (try? String(contentsOf: logURL, encoding: .utf8)) ?? ""
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("ready: socks5 ") }) else { return false }
        socks = try TransportEndpoint(parsing: String(line.split(separator: " ")[2]))
        return true
    }
    guard try await fetchMarkerPage(socks: socks!, environment: environment) else {
        throw MemoryBenchmarkError(description: "postern run: the page did not come through")
    }
    try await Task.sleep(for: .seconds(1))
    return try ResidentBreakdown(pid: process.processIdentifier)
}

/// Debian's tor with obfs4proxy as its managed client, same bridge and base torrc.
func measureStockTor(environment: [String: String]) async throws -> (tor: ResidentBreakdown, obfs4proxy: ResidentBreakdown) {
    guard let bridge = environment["TB_BRIDGE_OBFS4"], let torrcPath = environment["TB_CLIENT_TORRC"] else {
        throw MemoryBenchmarkError(description: "run inside the test bed")
    }
    let obfs4proxy = environment["TB_OBFS4PROXY"] ?? "/usr/bin/obfs4proxy"
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-bench-memtor-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    defer { try? FileManager.default.removeItem(at: directory) }
    let socksPort = try freeLoopbackPort()
    let torrc = try String(contentsOfFile: torrcPath, encoding: .utf8) + """

    DataDirectory \(directory.path)
    SocksPort 127.0.0.1:\(socksPort)
    Log notice file \(directory.path)/tor.log
    GeoIPFile ""
    GeoIPv6File ""
    UseBridges 1
    Bridge \(bridge)
    ClientTransportPlugin obfs4 exec \(obfs4proxy)

    """
    let file = directory.appendingPathComponent("torrc")
    try torrc.write(to: file, atomically: true, encoding: .utf8)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/tor")
    process.arguments = ["-f", file.path, "--quiet"]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.runWithDefaultSignalMask()
    do {
        let measured = try await measureReadyStockTor(process, logPath: directory.appendingPathComponent("tor.log").path,
                                                      socksPort: socksPort, environment: environment)
        await process.stop()
        return measured
    } catch {
        await process.stop()
        throw error
    }
}

private func measureReadyStockTor(_ process: Process, logPath: String, socksPort: UInt16,
                                  environment: [String: String]) async throws -> (tor: ResidentBreakdown, obfs4proxy: ResidentBreakdown) {
    try await waitFor("tor to bootstrap", timeout: .seconds(120)) {
        guard process.isRunning else { throw MemoryBenchmarkError(description: "tor exited \(process.terminationStatus)") }
        return ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").contains("Bootstrapped 100%")
    }
    guard try await fetchMarkerPage(socks: try TransportEndpoint(parsing: "127.0.0.1:\(socksPort)"), environment: environment) else {
        throw MemoryBenchmarkError(description: "stock tor: the page did not come through")
    }
    try await Task.sleep(for: .seconds(1))
    guard let child = childProcesses(of: process.processIdentifier).first else {
        throw MemoryBenchmarkError(description: "tor has no obfs4proxy child")
    }
    return (try ResidentBreakdown(pid: process.processIdentifier), try ResidentBreakdown(pid: child))
}

func runMemoryBenchmark() async throws {
    let environment = ProcessInfo.processInfo.environment
    let selfPath = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let postern = environment["POSTERN_BINARY"] ?? selfPath.deletingLastPathComponent().appendingPathComponent("postern").path
    guard FileManager.default.isExecutableFile(atPath: postern) else {
        throw MemoryBenchmarkError(description: "\(postern) is missing (make build)")
    }
    print("memory benchmark: RSS after bootstrap through the test bed's obfs4 bridge and one page fetched")
    let ours = try await measurePosternRun(postern: postern, environment: environment)
    let stock = try await measureStockTor(environment: environment)
    let pair = stock.tor + stock.obfs4proxy
    print("  postern run (\(postern)): \(ours.summary)")
    print("  tor:                      \(stock.tor.summary)")
    print("  obfs4proxy:               \(stock.obfs4proxy.summary)")
    print("  tor + obfs4proxy:         \(mb(pair.total)) MB")
    print("")
    print("RESULT memory ratio (postern RSS / tor + obfs4proxy RSS) \(format(Double(ours.total) / Double(pair.total))): \(mb(ours.total)) MB vs \(mb(pair.total)) MB")
}
