// `postern-bench snowflake`: our snowflake client against Debian's snowflake-client on the same
// test-bed stack (scripts/testbed: broker, coturn, two snowflake-proxy 2.5.1, the upstream
// server, the bridge), in one run. Run it inside the test bed:
//
//   scripts/testbed exec --dir DIR .build/release/postern-bench snowflake [--rounds N] [--megabytes N]
//
// (scripts/bench-snowflake.sh brings a test bed up, runs this and takes it down.)
//
// Each client is the managed pluggable transport of a plain Debian tor with the test bed's
// snowflake bridge line and a fresh data directory: ours is this binary re-executed as
// `pt-client` (what `postern pt-client` runs), theirs is /usr/bin/snowflake-client
// -keep-local-addresses. For each:
//   - bootstrap: tor start → "Bootstrapped 100%" (rendezvous, WebRTC, Turbo Tunnel, then tor's
//     directory fetches through the bridge);
//   - channel: tor's "Connected to pluggable transport" → "Handshake with a relay done" in its
//     millisecond log: rendezvous, WebRTC and the link handshake, free of tor's one-second ticks;
//   - time to first byte: a SOCKS connection with fresh isolation credentials (so a new circuit,
//     built through the snowflake link) to a loopback bulk peer, until its first byte arrives;
//   - bulk throughput: N MB down and N MB up through tor, snowflake and the exit.
// Rounds alternate which client goes first. Ratios are theirs / ours for times (≥ 1: we are
// faster) and ours / theirs for throughput (≥ 1: we are faster).
import Foundation
import TransportBase

struct SnowflakeBenchmarkError: Error, CustomStringConvertible { let description: String }

/// A plain tor client whose only bridge is `bridge` (the test bed's snowflake bridge, or its
/// webtunnel bridge for WebtunnelBenchmark.swift), using `client` (a command line) as the
/// transport plugin for `transport`. `environment` is added to this process's for tor, which hands
/// it on to the plugin (the webtunnel benchmark's SSL_CERT_FILE).
final class BenchTorClient: @unchecked Sendable {
    let label: String
    let directory: URL
    let socksPort: UInt16
    private let process = Process()
    private let started = ContinuousClock.now

    init(label: String, client: [String], bridge: String, baseTorrc: String, socksPort: UInt16,
         transport: String = "snowflake", environment: [String: String] = [:]) throws {
        self.label = label
        self.socksPort = socksPort
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-bench-sf-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let torrc = baseTorrc + """

        DataDirectory \(directory.path)
        SocksPort 127.0.0.1:\(socksPort)
        Log notice file \(directory.path)/tor.log
        LogTimeGranularity 1
        GeoIPFile ""
        GeoIPv6File ""
        UseBridges 1
        Bridge \(bridge)
        ClientTransportPlugin \(transport) exec \(client.joined(separator: " "))

        """
        let file = directory.appendingPathComponent("torrc")
        try torrc.write(to: file, atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/tor")
        process.arguments = ["-f", file.path, "--quiet"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        try process.runWithDefaultSignalMask()
    }

    var log: String { (try? String(contentsOf: directory.appendingPathComponent("tor.log"), encoding: .utf8)) ?? "" }

    /// Seconds from start to "Bootstrapped 100%".
    func waitForBootstrap(timeout: Duration) async throws -> Double {
        while ContinuousClock.now - started < timeout {
            if log.contains("Bootstrapped 100%") { return seconds(ContinuousClock.now - started) }
            guard process.isRunning else { throw SnowflakeBenchmarkError(description: "\(label): tor exited:\n\(log.suffix(1500))") }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw SnowflakeBenchmarkError(description: "\(label): no bootstrap in \(timeout):\n\(log.suffix(1500))")
    }

    /// Seconds between two bootstrap milestones in tor's log (millisecond timestamps), e.g.
    /// "Bootstrapped 2%" (connected to the PT) and "Bootstrapped 15%" (link handshake with the
    /// bridge done): the transport's own time to a working channel, free of tor's one-second ticks.
    func secondsBetween(_ first: String, _ second: String) -> Double? {
        func time(_ marker: String) -> Double? {
            guard let line = log.split(separator: "\n").first(where: { $0.contains(marker) }) else { return nil }
            // "Nov 29 15:57:10.411 [notice] ..."
            let parts = line.split(separator: " ")
            guard parts.count > 2 else { return nil }
            let clock = parts[2].split(separator: ":")
            guard clock.count == 3, let h = Double(clock[0]), let m = Double(clock[1]), let sec = Double(clock[2]) else { return nil }
            return h * 3600 + m * 60 + sec
        }
        guard let a = time(first), let b = time(second) else { return nil }
        return b >= a ? b - a : b + 86400 - a
    }

    /// Every "Bootstrapped N%" in tor's log as "N%@seconds" after the log opened (millisecond
    /// timestamps): where the bootstrap time goes, step by step.
    var timeline: String {
        func clock(_ line: Substring) -> Double? {
            let parts = line.split(separator: " ")
            guard parts.count > 2 else { return nil }
            let fields = parts[2].split(separator: ":")
            guard fields.count == 3, let h = Double(fields[0]), let m = Double(fields[1]), let s = Double(fields[2]) else { return nil }
            return h * 3600 + m * 60 + s
        }
        let lines = log.split(separator: "\n")
        guard let first = lines.first, let origin = clock(first) else { return "" }
        return lines.compactMap { line -> String? in
            guard let range = line.range(of: "Bootstrapped "), let time = clock(line) else { return nil }
            let percent = line[range.upperBound...].prefix { $0 != " " && $0 != "(" }
            return "\(percent)@\(format(time - origin))"
        }.joined(separator: " ")
    }

    func stop() {
        if process.isRunning { process.terminate() }
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A free loopback TCP port (bound, read, released).
func freeLoopbackPort() throws -> UInt16 {
    let listener = try LoopbackListener()
    defer { listener.close() }
    return listener.port
}

/// SOCKS connect through tor with fresh isolation credentials, ask the bulk peer for data, and
/// time the first byte.
func timeToFirstByte(socks: TransportEndpoint, peer: TransportEndpoint, isolation: String) async throws -> Double {
    let started = ContinuousClock.now
    let socket = try await socksConnect(via: socks, to: peer, arguments: isolation)
    defer { socket.close() }
    try await socket.write(sizeHeader("D", 1))
    let first = try await socket.read(maximumCount: 1)
    guard first.count == 1 else { throw SnowflakeBenchmarkError(description: "no first byte") }
    return seconds(ContinuousClock.now - started)
}

/// N bytes through tor to or from the bulk peer; MB/s.
func bulkThroughTor(socks: TransportEndpoint, peer: TransportEndpoint, upload: Bool, bytes: Int, isolation: String) async throws -> Double {
    let socket = try await socksConnect(via: socks, to: peer, arguments: isolation)
    defer { socket.close() }
    let started = ContinuousClock.now
    try await exchangeWithBulkPeer(on: socket, upload: upload, bytes: bytes)
    return Double(bytes) / seconds(ContinuousClock.now - started) / 1_000_000
}

struct SnowflakeSample {
    var bootstrap: [Double] = []
    var channel: [Double] = []
    var firstByte: [Double] = []
    var download: [Double] = []
    var upload: [Double] = []
}

func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func runSnowflakeBenchmark(rounds: Int, megabytes: Int, firstBytes: Int) async throws {
    let environment = ProcessInfo.processInfo.environment
    guard let bridge = environment["TB_BRIDGE_SNOWFLAKE"], !bridge.isEmpty,
          let torrcPath = environment["TB_CLIENT_TORRC"] else {
        throw SnowflakeBenchmarkError(description: "run inside the test bed with its snowflake stack: scripts/testbed exec --dir DIR postern-bench snowflake (or scripts/bench-snowflake.sh)")
    }
    let theirBinary = environment["TB_SNOWFLAKE_CLIENT"] ?? "/usr/bin/snowflake-client"
    guard FileManager.default.isExecutableFile(atPath: theirBinary) else {
        throw SnowflakeBenchmarkError(description: "\(theirBinary) is missing (apt-get install snowflake-client)")
    }
    let baseTorrc = try String(contentsOfFile: torrcPath, encoding: .utf8)
    let selfPath = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    let clients: [(label: String, command: [String])] = [
        ("postern snowflake", [selfPath, "pt-client"]),
        ("snowflake-client", [theirBinary, "-keep-local-addresses"]),
    ]
    // The bulk peer on a loopback address of its own in the namespace, on a port of the test
    // bed's service range (TB_SERVICE_PORTS, 8000-8999): clients choose exits by the port summary
    // in microdescriptors, which only that range is in.
    let peer = try BulkPeer(address: try TransportEndpoint(ipv4: [127, 0, 4, 77], port: 8077))
    defer { peer.stop() }
    let peerEndpoint = peer.endpoint
    let bytes = megabytes * 1_000_000
    print("snowflake benchmark: \(rounds) round(s); per client and round: bootstrap, \(firstBytes) first-byte samples on new circuits, \(megabytes) MB down and up")
    print("path: tor (Debian) → managed snowflake client → broker rendezvous → snowflake-proxy 2.5.1 (WebRTC) → upstream server → bridge → exit → loopback peer")

    var results: [String: SnowflakeSample] = [:]
    var isolation = 0
    for round in 1...rounds {
        let order = round % 2 == 1 ? clients : clients.reversed()
        for client in order {
            let tor = try BenchTorClient(label: client.label, client: client.command, bridge: bridge, baseTorrc: baseTorrc,
                                         socksPort: try freeLoopbackPort())
            defer { tor.stop() }
            let socks = try TransportEndpoint(parsing: "127.0.0.1:\(tor.socksPort)")
            var sample = results[client.label, default: SnowflakeSample()]
            let bootstrap = try await tor.waitForBootstrap(timeout: .seconds(180))
            sample.bootstrap.append(bootstrap)
            let channel = tor.secondsBetween("Bootstrapped 2%", "Bootstrapped 15%") ?? .nan
            sample.channel.append(channel)
            var firsts: [Double] = []
            let down: Double, up: Double
            do {
                for _ in 0..<firstBytes {
                    isolation += 1
                    firsts.append(try await timeToFirstByte(socks: socks, peer: peerEndpoint, isolation: "bench-ttfb-\(isolation)"))
                }
                isolation += 1
                down = try await bulkThroughTor(socks: socks, peer: peerEndpoint, upload: false, bytes: bytes, isolation: "bench-bulk-\(isolation)")
                up = try await bulkThroughTor(socks: socks, peer: peerEndpoint, upload: true, bytes: bytes, isolation: "bench-bulk-\(isolation)")
            } catch {
                throw SnowflakeBenchmarkError(description: "\(client.label): \(error)\ntor log:\n\(tor.log.suffix(2000))")
            }
            sample.firstByte += firsts
            sample.download.append(down)
            sample.upload.append(up)
            results[client.label] = sample
            print("    tor's steps (s after its log opened): \(tor.timeline)")
            print("  round \(round) \(client.label.padding(toLength: 18, withPad: " ", startingAt: 0)) bootstrap \(format(bootstrap)) s, channel \(format(channel * 1000, 0)) ms, first byte median \(format(median(firsts) * 1000, 0)) ms, down \(format(down, 2)) MB/s, up \(format(up, 2)) MB/s")
        }
    }

    let ours = results[clients[0].label]!, theirs = results[clients[1].label]!
    print("")
    print("client              bootstrap s   channel ms   first byte ms   down MB/s   up MB/s   (medians)")
    for (label, sample) in [(clients[0].label, ours), (clients[1].label, theirs)] {
        print("\(label.padding(toLength: 19, withPad: " ", startingAt: 0)) \(format(median(sample.bootstrap)).padding(toLength: 13, withPad: " ", startingAt: 0)) \(format(median(sample.channel) * 1000, 0).padding(toLength: 12, withPad: " ", startingAt: 0)) \(format(median(sample.firstByte) * 1000, 0).padding(toLength: 15, withPad: " ", startingAt: 0)) \(format(median(sample.download)).padding(toLength: 11, withPad: " ", startingAt: 0)) \(format(median(sample.upload)))")
    }
    print("(channel: tor's \"Connected to pluggable transport\" → \"Handshake with a relay done\": rendezvous, WebRTC and tor's link handshake through it)")
    let bootstrapRatio = median(theirs.bootstrap) / median(ours.bootstrap)
    let channelRatio = median(theirs.channel) / median(ours.channel)
    let firstByteRatio = median(theirs.firstByte) / median(ours.firstByte)
    let downRatio = median(ours.download) / median(theirs.download)
    let upRatio = median(ours.upload) / median(theirs.upload)
    print("")
    print("RESULT snowflake bootstrap ratio (snowflake-client / postern) \(format(bootstrapRatio)); channel ratio \(format(channelRatio)); first-byte ratio \(format(firstByteRatio)); throughput ratio (postern / snowflake-client) down \(format(downRatio)) up \(format(upRatio))")
}
