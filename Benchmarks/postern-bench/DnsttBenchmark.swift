// `postern-bench dnstt`: `postern run` through the test bed's dnstt bridge lines, one per way to the
// bed's real resolver (Debian's unbound on 198.51.100.53: plain UDP 53, DNS over TLS 853, DNS over
// HTTPS 443), which forwards the tunnel zone to the stand-in dnstt server (Tests/Support/dnstt-testbed,
// piped to the vanilla bridge). Run it inside the test bed (scripts/bench.sh does):
//
//   scripts/testbed exec --dir DIR env POSTERN_BINARY=... [POSTERN_BASELINE=...] postern-bench dnstt
//       [--rounds N] [--samples N] [--kilobytes N] [--only udp,dot,doh]
//
// Debian has no dnstt client to be the peer, so, as for webtunnel, the peer is another Postern
// binary: POSTERN_BASELINE (e.g. a build of an earlier commit), measured interleaved (per
// transport, rounds alternate which binary goes first). Without it the figures are printed with no
// ratio. POSTERN_BINARY defaults to the `postern` beside this binary. Per binary and transport, one
// `postern run --transport dnstt` with only that bridge line (from a 0600 file, not argv) and the
// bed's CA in SSL_CERT_FILE:
//   - bootstrap: process start → its "ready: socks5" line;
//   - first byte: SOCKS CONNECT through its listener to a loopback bulk peer, a one-byte request,
//     until that byte arrives. "new circuit": fresh isolation credentials, so a circuit no stream
//     has used; tor keeps spare circuits built ahead, so it is often one built before the request
//     (a build through the tunnel is then not in the figure). "built circuit": the credentials of
//     the last sample, its circuit reused, so only the stream's round trips (RELAY_BEGIN/CONNECTED,
//     then the request and its answer) cross the tunnel;
//   - download: N kB (default 5000) from the bulk peer on a built circuit, timed from the request
//     to the last byte. 5 MB took 5-7 s per resolver path in the bed with a debug build (4 MiB:
//     4.7 s over UDP, 5.5 s DoT, 6.6 s DoH), well inside a minute on a loaded machine;
//   - bytes on the wire: kernel counters (an nftables table of this benchmark's, in the bed's
//     namespace, output hook) on the client–resolver link: every IPv4 packet to 198.51.100.53 on
//     UDP/TCP port 53, 853 or 443 and every one from it, both directions added, IP and UDP/TCP
//     headers included (TCP handshakes, ACKs, the TLS records of DoT and DoH, HTTP/2 framing of
//     DoH, retransmissions, dnstt's empty polls while the download runs). On loopback the MTU is
//     65536 and the kernel hands nftables whole segmentation-offload packets, so TCP's per-segment
//     headers are fewer than on a 1500-byte path; UDP is one datagram a packet either way. Divided
//     by the payload bytes the download delivered to the SOCKS client. The resolver's own leg
//     (unbound ↔ the stand-in on 127.0.8.1:53) is counted apart and printed for information only.
// Nothing else in the bed talks to the resolver while this runs (the bed's own checks are not run
// by `exec`), so the counters see only the client under test.
import Foundation
import Synchronization
import TransportBase
import TransportWire

struct DnsttBenchmarkError: Error, CustomStringConvertible { let description: String }

/// Bytes counted by the kernel on the two resolver legs since the table was loaded.
struct ResolverWireBytes {
    var toResolver = 0
    var fromResolver = 0
    var toServer = 0
    var fromServer = 0

    var clientLink: Int { toResolver + fromResolver }
    var resolverLeg: Int { toServer + fromServer }

    static func - (a: Self, b: Self) -> Self {
        Self(toResolver: a.toResolver - b.toResolver, fromResolver: a.fromResolver - b.fromResolver,
             toServer: a.toServer - b.toServer, fromServer: a.fromServer - b.fromServer)
    }
}

/// An nftables table of named counters in the bed's namespace (`scripts/testbed exec` runs us
/// there, as root): the kernel counts, so the figure is what left and entered the sockets, not what
/// the transport believes it sent. Removed by `remove()`; a leftover from a killed run is replaced.
struct ResolverLinkCounters {
    static let nft = "/usr/sbin/nft"
    static let table = "postern_bench_dnstt"
    static let names = ["to_resolver", "from_resolver", "to_server", "from_server"]

    init(resolver: String, server: String, serverPort: UInt16) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.nft) else {
            throw DnsttBenchmarkError(description: "\(Self.nft) is missing (apt-get install nftables): the wire bytes are counted by the kernel")
        }
        _ = try? Self.run(["delete", "table", "ip", Self.table])
        let ports = "{ 53, 443, 853 }"
        let rules = """
        table ip \(Self.table) {
            counter to_resolver {}
            counter from_resolver {}
            counter to_server {}
            counter from_server {}
            chain output {
                type filter hook output priority -10; policy accept;
                ip daddr \(resolver) meta l4proto { tcp, udp } th dport \(ports) counter name "to_resolver"
                ip saddr \(resolver) meta l4proto { tcp, udp } th sport \(ports) counter name "from_resolver"
                ip daddr \(server) meta l4proto { tcp, udp } th dport \(serverPort) counter name "to_server"
                ip saddr \(server) meta l4proto { tcp, udp } th sport \(serverPort) counter name "from_server"
            }
        }

        """
        _ = try Self.run(["-f", "-"], input: rules)
    }

    func read() throws -> ResolverWireBytes {
        let text = try Self.run(["list", "counters", "table", "ip", Self.table])
        // "\tcounter to_resolver {\n\t\tpackets 12 bytes 3456\n\t}" for each (nft 1.0.6, tabs).
        var bytes: [String: Int] = [:]
        var current: String?
        for line in text.split(separator: "\n") {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if words.first == "counter", words.count > 1 { current = String(words[1]) }
            if let current, let at = words.firstIndex(of: "bytes"), at + 1 < words.count, let value = Int(words[at + 1]) {
                bytes[current] = value
            }
        }
        guard Self.names.allSatisfy({ bytes[$0] != nil }) else {
            throw DnsttBenchmarkError(description: "nft listed no counters for \(Self.names.filter { bytes[$0] == nil }): \(text.prefix(500))")
        }
        return ResolverWireBytes(toResolver: bytes["to_resolver"]!, fromResolver: bytes["from_resolver"]!,
                                 toServer: bytes["to_server"]!, fromServer: bytes["from_server"]!)
    }

    func remove() { _ = try? Self.run(["delete", "table", "ip", Self.table]) }

    /// nft with `input` on stdin; its standard output, or an error with its standard error.
    private static func run(_ arguments: [String], input: String = "") throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: nft)
        process.arguments = arguments
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        // nft's output is a few hundred bytes: read to the end, then reap.
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        let err = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw DnsttBenchmarkError(description: "nft \(arguments.prefix(2).joined(separator: " ")) exited \(process.terminationStatus): \(String(decoding: err, as: UTF8.self).prefix(300))")
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// The socket an operation under a deadline is using, closed when the deadline passes (which makes
/// the pending read or write fail), and whether it did.
final class DeadlineSocket: Sendable {
    private let state = Mutex<(socket: TCPSocket?, expired: Bool)>((nil, false))
    func hold(_ socket: TCPSocket) {
        state.withLock { state in
            state.socket = socket
            if state.expired { socket.close() }
        }
    }
    func expire() { state.withLock { $0.expired = true; $0.socket?.close() } }
    var expired: Bool { state.withLock { $0.expired } }
}

/// `body` with `limit` to finish; past it, the socket it holds is closed and the error says what
/// did not finish in time.
func withSocketDeadline<T: Sendable>(_ limit: Duration, _ what: String, _ body: (DeadlineSocket) async throws -> T) async throws -> T {
    let holder = DeadlineSocket()
    do {
        return try await withDeadline(limit, expired: { holder.expire() }) { try await body(holder) }
    } catch {
        if holder.expired { throw DnsttBenchmarkError(description: "\(what): not done within \(limit)") }
        throw error
    }
}

struct DnsttRunSample {
    var bootstrap: Double = .nan           // s
    var bootstrapWire = ResolverWireBytes()
    var firstByteNew: [Double] = []        // s
    var firstByteBuilt: [Double] = []      // s
    var download: Double = .nan            // bytes/s
    var downloadWire = ResolverWireBytes()
    var payload = 0

    var wirePerPayload: Double { Double(downloadWire.clientLink) / Double(payload) }
    var resolverLegPerPayload: Double { Double(downloadWire.resolverLeg) / Double(payload) }
}

/// One `postern run --transport dnstt` with `bridge` only: its figures, measured as described above.
func measureDnsttRun(postern: String, bridge: String, caFile: String, torrc: String, peer: TransportEndpoint,
                     counters: ResolverLinkCounters, firstBytes: Int, bytes: Int, isolation: String) async throws -> DnsttRunSample {
    let config = FileManager.default.temporaryDirectory.appendingPathComponent("postern-bench-dnstt-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    defer { try? FileManager.default.removeItem(at: config) }
    // The line is a secret (pubkey, domain): a 0600 file, never argv.
    let bridgesFile = config.appendingPathComponent("bridges.txt")
    guard FileManager.default.createFile(atPath: bridgesFile.path, contents: Data((bridge + "\n").utf8),
                                         attributes: [.posixPermissions: 0o600]) else {
        throw DnsttBenchmarkError(description: "cannot write \(bridgesFile.path)")
    }
    let logURL = config.appendingPathComponent("run.log")
    _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
    let socksPort = try freeLoopbackPort()
    let socks = try TransportEndpoint(parsing: "127.0.0.1:\(socksPort)")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: postern)
    process.arguments = ["--config-dir", config.appendingPathComponent("config").path, "run",
                         "--bridges-file", bridgesFile.path, "--transport", "dnstt",
                         "--socks", "127.0.0.1:\(socksPort)", "--tor-options-file", torrc,
                         "--data-dir", config.appendingPathComponent("tor").path]
    process.environment = ProcessInfo.processInfo.environment.merging(["SSL_CERT_FILE": caFile]) { $1 }
    let log = try FileHandle(forWritingTo: logURL)
    defer { try? log.close() }
    process.standardOutput = log
    process.standardError = log
    process.standardInput = FileHandle.nullDevice
    var sample = DnsttRunSample()
    let before = try counters.read()
    let started = ContinuousClock.now
    try process.runWithDefaultSignalMask()
    do {
        let runLog = { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }
        do {
            try await waitFor("postern run's ready line", timeout: .seconds(180)) {
                guard process.isRunning else { throw DnsttBenchmarkError(description: "postern run exited \(process.terminationStatus)") }
                return runLog().contains("ready: socks5 ")
            }
        } catch {
            throw DnsttBenchmarkError(description: "\(error); its output ends:\n\(runLog().suffix(1500))")
        }
        sample.bootstrap = seconds(ContinuousClock.now - started)
        sample.bootstrapWire = try counters.read() - before

        for index in 1...firstBytes {
            sample.firstByteNew.append(try await withSocketDeadline(.seconds(90), "first byte on a new circuit") { holder in
                try await dnsttFirstByte(socks: socks, peer: peer, isolation: "\(isolation)-new-\(index)", holder: holder)
            })
        }
        let built = "\(isolation)-new-\(firstBytes)"
        for _ in 1...firstBytes {
            sample.firstByteBuilt.append(try await withSocketDeadline(.seconds(60), "first byte on a built circuit") { holder in
                try await dnsttFirstByte(socks: socks, peer: peer, isolation: built, holder: holder)
            })
        }

        // The download: counters read once the stream is open (its circuit built), so the bytes
        // are the transfer's own, tunnel polls and tor's cells around it included.
        let (elapsed, wire) = try await withSocketDeadline(.seconds(180), "download of \(bytes / 1000) kB (try a smaller --kilobytes)") { holder in
            let socket = try await socksConnect(via: socks, to: peer, arguments: built) { holder.hold($0) }
            defer { socket.close() }
            let start = try counters.read()
            let began = ContinuousClock.now
            try await exchangeWithBulkPeer(on: socket, upload: false, bytes: bytes)
            let elapsed = seconds(ContinuousClock.now - began)
            return (elapsed, try counters.read() - start)
        }
        sample.download = Double(bytes) / elapsed
        sample.downloadWire = wire
        sample.payload = bytes
        await process.stop()
        return sample
    } catch {
        await process.stop()
        throw error
    }
}

/// Seconds from SOCKS CONNECT to the first byte of the bulk peer's answer to a one-byte request.
func dnsttFirstByte(socks: TransportEndpoint, peer: TransportEndpoint, isolation: String, holder: DeadlineSocket) async throws -> Double {
    let started = ContinuousClock.now
    let socket = try await socksConnect(via: socks, to: peer, arguments: isolation) { holder.hold($0) }
    defer { socket.close() }
    try await socket.write(sizeHeader("D", 1))
    guard try await socket.read(maximumCount: 1).count == 1 else { throw DnsttBenchmarkError(description: "the bulk peer's byte did not come") }
    return seconds(ContinuousClock.now - started)
}

func runDnsttBenchmark(rounds: Int, firstBytes: Int, kilobytes: Int, only: Set<String>?) async throws {
    let environment = ProcessInfo.processInfo.environment
    guard environment["TB_DNSTT"] == "1", let caFile = environment["TB_DNSTT_CA"], let torrc = environment["TB_CLIENT_TORRC"],
          let resolver = environment["TB_DNSTT_RESOLVER_ADDR"], let serverUDP = environment["TB_DNSTT_SERVER_UDP"] else {
        throw DnsttBenchmarkError(description: "run inside the test bed with its dnstt stack (namespace mode): scripts/testbed exec --dir DIR postern-bench dnstt")
    }
    let server = try TransportEndpoint(parsing: serverUDP)
    guard !server.isIPv6 else { throw DnsttBenchmarkError(description: "TB_DNSTT_SERVER_UDP is not an IPv4 endpoint") }
    let transports = [("udp", "TB_BRIDGE_DNSTT_UDP"), ("dot", "TB_BRIDGE_DNSTT_DOT"), ("doh", "TB_BRIDGE_DNSTT_DOH")]
        .filter { only?.contains($0.0) ?? true }
    guard !transports.isEmpty else { throw DnsttBenchmarkError(description: "--only takes udp, dot and doh") }
    for (_, key) in transports where !(environment[key] ?? "").hasPrefix("dnstt ") {
        throw DnsttBenchmarkError(description: "\(key) is not a dnstt bridge line in the bed's environment")
    }
    let binaries = PosternBinary.underTest(environment)
    if let missing = binaries.first(where: { !$0.isExecutable }) {
        throw DnsttBenchmarkError(description: missing.notExecutableMessage)
    }
    let counters = try ResolverLinkCounters(resolver: resolver, server: server.addressBytes.map(String.init).joined(separator: "."), serverPort: server.port)
    defer { counters.remove() }
    // On a loopback address of its own, on a port of the bed's service range (exits' policies).
    let peer = try BulkPeer(address: try TransportEndpoint(ipv4: [127, 0, 4, 79], port: 8079))
    defer { peer.stop() }
    let bytes = kilobytes * 1000

    print("dnstt benchmark: \(rounds) round(s) per transport; per binary and round: `postern run --transport dnstt` to ready, \(firstBytes) first-byte samples on new and on a built circuit, \(kilobytes) kB down")
    print("path: postern → resolver (unbound, \(resolver): udp 53 | DoT 853 | DoH 443, bed CA) → stand-in dnstt server \(serverUDP) → vanilla bridge → relay → exit → loopback peer")
    print("wire bytes: kernel counters (nftables, output hook, bed namespace) on client ↔ \(resolver) ports 53/853/443, both ways, IP + UDP/TCP headers included")
    for binary in binaries { print("  \(binary.label): \(binary.path) run") }

    var results: [String: [String: [DnsttRunSample]]] = [:]  // transport → label → samples
    var failures: [String: String] = [:]                      // transport → first failure
    var isolation = 0
    // A baseline built before dnstt existed says so on its first run; ours is then measured alone.
    var baselineLacksDnstt = false
    for (transport, key) in transports {
        let bridge = environment[key]!
        for round in 1...rounds {
            for binary in round % 2 == 1 ? binaries : binaries.reversed() where !(binary.label == "baseline" && baselineLacksDnstt) {
                isolation += 1
                do {
                    let sample = try await measureDnsttRun(postern: binary.path, bridge: bridge, caFile: caFile, torrc: torrc, peer: peer.endpoint,
                                                           counters: counters, firstBytes: firstBytes, bytes: bytes, isolation: "bench-dnstt-\(isolation)")
                    results[transport, default: [:]][binary.label, default: []].append(sample)
                    print("  \(transport) round \(round) \(binary.label.padding(toLength: 9, withPad: " ", startingAt: 0)) bootstrap \(format(sample.bootstrap)) s (\(format(Double(sample.bootstrapWire.clientLink) / 1000, 0)) kB on the wire), first byte median \(format(median(sample.firstByteNew) * 1000, 0)) ms new circuit, \(format(median(sample.firstByteBuilt) * 1000, 0)) ms built, down \(format(sample.download / 1000, 1)) kB/s, wire \(format(sample.wirePerPayload)) B per payload B (up \(format(Double(sample.downloadWire.toResolver) / Double(sample.payload))), down \(format(Double(sample.downloadWire.fromResolver) / Double(sample.payload)))); resolver ↔ stand-in \(format(sample.resolverLegPerPayload))")
                } catch where binary.label == "baseline" && "\(error)".contains("transport is not available in this build") {
                    baselineLacksDnstt = true
                    print("  baseline: this build has no dnstt transport; ours is measured alone, without a ratio")
                } catch {
                    print("  \(transport) round \(round) \(binary.label): failed: \(error)")
                    if failures[transport] == nil { failures[transport] = "\(binary.label): \(String("\(error)".prefix { $0 != "\n" }))" }
                }
            }
        }
    }

    print("")
    print("transport client     bootstrap s   first byte ms (new, built)   down kB/s   wire B per payload B   resolver leg B/B   (medians)")
    for (transport, _) in transports {
        for binary in binaries {
            guard let samples = results[transport]?[binary.label], !samples.isEmpty else { continue }
            print("\(transport.padding(toLength: 9, withPad: " ", startingAt: 0)) \(binary.label.padding(toLength: 10, withPad: " ", startingAt: 0)) \(format(median(samples.map(\.bootstrap))).padding(toLength: 13, withPad: " ", startingAt: 0)) \((format(median(samples.flatMap(\.firstByteNew)) * 1000, 0) + ", " + format(median(samples.flatMap(\.firstByteBuilt)) * 1000, 0)).padding(toLength: 28, withPad: " ", startingAt: 0)) \(format(median(samples.map(\.download)) / 1000, 1).padding(toLength: 11, withPad: " ", startingAt: 0)) \(format(median(samples.map(\.wirePerPayload))).padding(toLength: 22, withPad: " ", startingAt: 0)) \(format(median(samples.map(\.resolverLegPerPayload))))")
        }
    }
    print("(kB = 1000 bytes; wire B per payload B: client ↔ resolver bytes both ways during the download / bytes delivered; resolver leg: unbound ↔ stand-in, for information)")
    print("")
    for (transport, _) in transports {
        let ours = results[transport]?["postern"] ?? []
        guard !ours.isEmpty, failures[transport] == nil else {
            print("RESULT dnstt \(transport): failed (\(failures[transport] ?? "no sample")), no figures")
            continue
        }
        guard binaries.count == 2, let theirs = results[transport]?["baseline"], !theirs.isEmpty else {
            print("RESULT dnstt \(transport) (\(baselineLacksDnstt ? "the baseline has no dnstt" : "no POSTERN_BASELINE"), no ratio): bootstrap \(format(median(ours.map(\.bootstrap)))) s, first byte \(format(median(ours.flatMap(\.firstByteNew)) * 1000, 0)) ms new circuit / \(format(median(ours.flatMap(\.firstByteBuilt)) * 1000, 0)) ms built, down \(format(median(ours.map(\.download)) / 1000, 1)) kB/s, \(format(median(ours.map(\.wirePerPayload)))) wire bytes per payload byte (client ↔ resolver, both ways)")
            continue
        }
        let bootstrap = median(theirs.map(\.bootstrap)) / median(ours.map(\.bootstrap))
        let firstNew = median(theirs.flatMap(\.firstByteNew)) / median(ours.flatMap(\.firstByteNew))
        let firstBuilt = median(theirs.flatMap(\.firstByteBuilt)) / median(ours.flatMap(\.firstByteBuilt))
        let down = median(ours.map(\.download)) / median(theirs.map(\.download))
        let wire = median(theirs.map(\.wirePerPayload)) / median(ours.map(\.wirePerPayload))
        print("RESULT dnstt \(transport) ratio (baseline / postern for times and wire bytes, postern / baseline for throughput; ≥ 1 means postern is better) bootstrap \(format(bootstrap)); first byte new circuit \(format(firstNew)), built \(format(firstBuilt)); down \(format(down)); wire bytes per payload byte \(format(wire)) (postern \(format(median(ours.map(\.wirePerPayload)))))")
    }
}
