// `postern-bench memory`: resident memory after bootstrapping through one of the test bed's bridge
// lines and fetching a page, for `postern run` (tor and the transport in-process) against a stock
// Debian tor with the same base torrc and the same line, its transport client beside it, in one
// run. Run it inside the test bed:
//
//   scripts/testbed exec --dir DIR .build/release/postern-bench memory
//
// (scripts/bench.sh does, as part of `make bench`.) The routes, each measured ours first:
//   - obfs4: the stock side is tor with Debian's obfs4proxy as its managed transport;
//   - snowflake (when the bed's snowflake stack is up): tor with Debian's snowflake-client
//     -keep-local-addresses as its managed transport, through the bed's broker, STUN and proxies;
//   - dnstt-udp and dnstt-doh (when the bed's dnstt stack is up), through the bed's unbound: Debian
//     has no dnstt client, so the stock side is tor with the bed's Go client double
//     (TB_DNSTT_CLIENT_DOUBLE, ours, a stand-in for upstream dnstt-client: same wire format and Go
//     libraries) forwarding a loopback port that tor uses as a plain bridge. Without the double,
//     ours is printed alone.
// The postern binary is $POSTERN_BINARY or the `postern` next to this benchmark (so
// `.build/release/postern`, the `make build` binary).
// RSS is VmRSS from /proc, read one second after the page arrived; for the stock pair it is tor's
// plus its client's. Resident pages of file mappings count (that is what RSS is); the breakdown
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

func waitFor(_ what: String, timeout: Duration, _ done: () throws -> Bool) async throws {
    let started = ContinuousClock.now
    while ContinuousClock.now - started < timeout {
        if try done() { return }
        try await Task.sleep(for: .milliseconds(100))
    }
    throw MemoryBenchmarkError(description: "timed out waiting for \(what)")
}

/// `postern run` with the route's line alone: RSS (with any children's) after bootstrap and one page.
func measurePosternRun(postern: String, route: MemoryRoute, environment: [String: String]) async throws -> ResidentBreakdown {
    guard let torrc = environment["TB_CLIENT_TORRC"] else {
        throw MemoryBenchmarkError(description: "run inside the test bed: scripts/testbed exec --dir DIR postern-bench memory")
    }
    let config = FileManager.default.temporaryDirectory.appendingPathComponent("postern-bench-mem-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    defer { try? FileManager.default.removeItem(at: config) }
    // The line is a secret (a cert, a pubkey, a broker): a 0600 file, never argv.
    let bridgesFile = config.appendingPathComponent("bridges.txt")
    guard FileManager.default.createFile(atPath: bridgesFile.path, contents: Data((route.bridge + "\n").utf8),
                                         attributes: [.posixPermissions: 0o600]) else {
        throw MemoryBenchmarkError(description: "cannot write \(bridgesFile.path)")
    }
    let logURL = config.appendingPathComponent("run.log")
    _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: postern)
    process.arguments = ["--config-dir", config.appendingPathComponent("config").path, "run",
                         "--bridges-file", bridgesFile.path, "--transport", route.transport,
                         "--tor-options-file", torrc, "--data-dir", config.appendingPathComponent("tor").path]
    if !route.posternEnvironment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(route.posternEnvironment) { $1 }
    }
    let log = try FileHandle(forWritingTo: logURL)
    defer { try? log.close() }
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
        let text = (try? String(contentsOf: logURL, encoding: .utf8)) ?? ""
        throw MemoryBenchmarkError(description: "postern run (\(route.name)): \(error); its output ends:\n\(text.suffix(1200))")
    }
}

private func measureReadyPostern(_ process: Process, logURL: URL, environment: [String: String]) async throws -> ResidentBreakdown {
    var socks: TransportEndpoint?
    // 180 s: a snowflake or dnstt bootstrap through the bed takes tens of seconds on a loaded machine.
    try await waitFor("postern run to be ready", timeout: .seconds(180)) {
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
    // Everything runs in-process; should a route ever start a helper, its memory counts too.
    return try childProcesses(of: process.processIdentifier).reduce(try ResidentBreakdown(pid: process.processIdentifier)) {
        try $0 + ResidentBreakdown(pid: $1)
    }
}

/// Debian's tor with the peer's lines and base torrc, its client beside it: each one's RSS after
/// bootstrap and the same page.
func measureStockTor(peer: MemoryPeer, environment: [String: String]) async throws -> (tor: ResidentBreakdown, client: ResidentBreakdown) {
    guard let torrcPath = environment["TB_CLIENT_TORRC"] else {
        throw MemoryBenchmarkError(description: "run inside the test bed")
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-bench-memtor-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    defer { try? FileManager.default.removeItem(at: directory) }
    var forwarder: Process?
    var lines = peer.torrcLines
    if let argv = peer.standalone {
        let port = String(try freeLoopbackPort())
        lines = lines.replacingOccurrences(of: "%PORT%", with: port)
        forwarder = try await startForwarder(argv.map { $0.replacingOccurrences(of: "%PORT%", with: port) },
                                       log: directory.appendingPathComponent("client.log"), readyMarker: peer.readyMarker)
    }
    let socksPort = try freeLoopbackPort()
    let torrc = try String(contentsOfFile: torrcPath, encoding: .utf8) + """

    DataDirectory \(directory.path)
    SocksPort 127.0.0.1:\(socksPort)
    Log notice file \(directory.path)/tor.log
    GeoIPFile ""
    GeoIPv6File ""
    UseBridges 1
    \(lines)

    """
    let file = directory.appendingPathComponent("torrc")
    try torrc.write(to: file, atomically: true, encoding: .utf8)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/tor")
    process.arguments = ["-f", file.path, "--quiet"]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    do {
        try process.runWithDefaultSignalMask()
        let tor = try await measureReadyStockTor(process, logPath: directory.appendingPathComponent("tor.log").path,
                                                 socksPort: socksPort, environment: environment)
        let client: ResidentBreakdown
        if let forwarder {
            client = try ResidentBreakdown(pid: forwarder.processIdentifier)
        } else if let child = childProcesses(of: process.processIdentifier).first {
            client = try ResidentBreakdown(pid: child)
        } else {
            throw MemoryBenchmarkError(description: "tor has no \(peer.label) child")
        }
        await process.stop()
        await forwarder?.stop()
        return (tor, client)
    } catch {
        await process.stop()
        await forwarder?.stop()
        throw error
    }
}

/// A client that forwards a loopback port through its tunnel, once it says it listens.
private func startForwarder(_ argv: [String], log logURL: URL, readyMarker: String) async throws -> Process {
    _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
    let log = try FileHandle(forWritingTo: logURL)
    defer { try? log.close() }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: argv[0])
    process.arguments = Array(argv.dropFirst())
    process.standardOutput = log
    process.standardError = log
    process.standardInput = FileHandle.nullDevice
    try process.runWithDefaultSignalMask()
    do {
        try await waitFor("\(URL(fileURLWithPath: argv[0]).lastPathComponent) to listen", timeout: .seconds(90)) {
            let text = (try? String(contentsOf: logURL, encoding: .utf8)) ?? ""
            guard process.isRunning else {
                throw MemoryBenchmarkError(description: "\(argv[0]) exited \(process.terminationStatus): \(text.suffix(600))")
            }
            return text.contains(readyMarker)
        }
    } catch {
        await process.stop()
        throw error
    }
    return process
}

private func measureReadyStockTor(_ process: Process, logPath: String, socksPort: UInt16,
                                  environment: [String: String]) async throws -> ResidentBreakdown {
    try await waitFor("tor to bootstrap", timeout: .seconds(180)) {
        guard process.isRunning else { throw MemoryBenchmarkError(description: "tor exited \(process.terminationStatus)") }
        return ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").contains("Bootstrapped 100%")
    }
    guard try await fetchMarkerPage(socks: try TransportEndpoint(parsing: "127.0.0.1:\(socksPort)"), environment: environment) else {
        throw MemoryBenchmarkError(description: "stock tor: the page did not come through")
    }
    try await Task.sleep(for: .seconds(1))
    return try ResidentBreakdown(pid: process.processIdentifier)
}

/// The routes of this bed: obfs4 always; snowflake and dnstt when their stacks are up.
func memoryRoutes(environment: [String: String]) throws -> (routes: [MemoryRoute], skipped: [String]) {
    guard let obfs4 = environment["TB_BRIDGE_OBFS4"], !obfs4.isEmpty else {
        throw MemoryBenchmarkError(description: "run inside the test bed: scripts/testbed exec --dir DIR postern-bench memory")
    }
    var routes = [MemoryRoute(name: "obfs4", transport: "obfs4", bridge: obfs4, posternEnvironment: [:],
                              peer: MemoryPeer(label: "obfs4proxy",
                                               torrcLines: "Bridge \(obfs4)\nClientTransportPlugin obfs4 exec \(environment["TB_OBFS4PROXY"] ?? "/usr/bin/obfs4proxy")",
                                               standalone: nil, readyMarker: ""),
                              missingPeer: "")]
    var skipped: [String] = []
    if environment["TB_SNOWFLAKE"] == "1", let snowflake = environment["TB_BRIDGE_SNOWFLAKE"], !snowflake.isEmpty {
        // Debian's snowflake-client as tor's managed transport, as `postern-bench snowflake` runs it;
        // -keep-local-addresses because the bed's proxies are reachable on loopback only (ours
        // keeps them by itself for a loopback broker).
        let client = environment["TB_SNOWFLAKE_CLIENT"] ?? "/usr/bin/snowflake-client"
        routes.append(MemoryRoute(name: "snowflake", transport: "snowflake", bridge: snowflake, posternEnvironment: [:],
                                  peer: MemoryPeer(label: "snowflake-client",
                                                   torrcLines: "Bridge \(snowflake)\nClientTransportPlugin snowflake exec \(client) -keep-local-addresses",
                                                   standalone: nil, readyMarker: ""),
                                  missingPeer: ""))
    } else {
        skipped.append("snowflake (the bed's snowflake stack is not up)")
    }
    if environment["TB_DNSTT"] == "1", let ca = environment["TB_DNSTT_CA"] {
        for (name, key) in [("dnstt-udp", "TB_BRIDGE_DNSTT_UDP"), ("dnstt-doh", "TB_BRIDGE_DNSTT_DOH")] {
            guard let line = environment[key], !line.isEmpty else { continue }
            routes.append(MemoryRoute(name: name, transport: "dnstt", bridge: line, posternEnvironment: ["SSL_CERT_FILE": ca],
                                      peer: dnsttPeer(line: line, environment: environment),
                                      missingPeer: "no dnstt client double in this bed (TB_DNSTT_CLIENT_DOUBLE)"))
        }
    } else {
        skipped.append("dnstt (the bed's dnstt stack is not up)")
    }
    return (routes, skipped)
}

/// Debian has no dnstt client. The bed's Go client double (Tests/Support/dnstt-testbed/client,
/// ours: the upstream client's wire format and its Go libraries, kcp-go, smux, Noise) stands in:
/// like upstream dnstt-client it forwards a local TCP port through one tunnel session, and tor's
/// bridge is that port with the line's fingerprint (the vanilla bridge behind the bed's stand-in).
private func dnsttPeer(line: String, environment: [String: String]) -> MemoryPeer? {
    guard let double = environment["TB_DNSTT_CLIENT_DOUBLE"], FileManager.default.isExecutableFile(atPath: double),
          let pubkeyFile = environment["TB_DNSTT_PUBKEY_FILE"], let domain = environment["TB_DNSTT_DOMAIN"] else { return nil }
    let fields = line.split(separator: " ").map(String.init)
    guard fields.count > 3 else { return nil }
    let fingerprint = fields[2]
    var path: [String] = []
    for field in fields.dropFirst(3) {
        if field.hasPrefix("udp=") { path = ["-udp", String(field.dropFirst(4))] }
        if field.hasPrefix("doh="), let ca = environment["TB_DNSTT_CA"] { path = ["-doh", String(field.dropFirst(4)), "-ca", ca] }
    }
    guard !path.isEmpty else { return nil }
    return MemoryPeer(label: "dnstt client double", torrcLines: "Bridge 127.0.0.1:%PORT% \(fingerprint)",
                      standalone: [double] + path + ["-pubkey-file", pubkeyFile, "-domain", domain, "-listen", "127.0.0.1:%PORT%"],
                      readyMarker: "forwarding ")
}

func runMemoryBenchmark() async throws {
    let environment = ProcessInfo.processInfo.environment
    let selfPath = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let postern = environment["POSTERN_BINARY"] ?? selfPath.deletingLastPathComponent().appendingPathComponent("postern").path
    guard FileManager.default.isExecutableFile(atPath: postern) else {
        throw MemoryBenchmarkError(description: "\(postern) is missing (make build)")
    }
    let (routes, skipped) = try memoryRoutes(environment: environment)
    print("memory benchmark: RSS after bootstrap through each of the test bed's bridge lines and one page fetched")
    print("  postern: \(postern)")
    var results: [String] = []
    var failed = 0
    for route in routes {
        do {
            results.append(try await measureRoute(route, postern: postern, environment: environment))
        } catch {
            failed += 1
            print("  \(route.name): failed: \(error)")
            results.append("RESULT memory \(route.name): failed (no ratio in this run)")
        }
    }
    for reason in skipped {
        results.append("RESULT memory: skipped \(reason)")
    }
    print("")
    results.forEach { print($0) }
    if failed > 0 { throw MemoryBenchmarkError(description: "\(failed) of \(routes.count) routes failed") }
}

/// One route: ours, then the peer's pair; the breakdown lines, and its RESULT line returned.
private func measureRoute(_ route: MemoryRoute, postern: String, environment: [String: String]) async throws -> String {
    let ours = try await measurePosternRun(postern: postern, route: route, environment: environment)
    print("  \(route.name):")
    print("    \("postern run:".padding(toLength: 28, withPad: " ", startingAt: 0))\(ours.summary)")
    guard let peer = route.peer else {
        print("    (no peer: \(route.missingPeer))")
        return "RESULT memory \(route.name) (postern RSS; no peer: \(route.missingPeer)): \(mb(ours.total)) MB"
    }
    let stock = try await measureStockTor(peer: peer, environment: environment)
    let pair = stock.tor + stock.client
    let column = { (name: String) in (name + ":").padding(toLength: 28, withPad: " ", startingAt: 0) }
    print("    \(column("tor"))\(stock.tor.summary)")
    print("    \(column(peer.label))\(stock.client.summary)")
    print("    \(column("tor + " + peer.label))\(mb(pair.total)) MB")
    return "RESULT memory \(route.name) ratio (postern RSS / tor + \(peer.label) RSS) \(format(Double(ours.total) / Double(pair.total))): \(mb(ours.total)) MB vs \(mb(pair.total)) MB"
}
