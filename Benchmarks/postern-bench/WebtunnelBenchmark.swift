// `postern-bench webtunnel`: our webtunnel client through the test bed's webtunnel stack (Debian's
// nginx on 198.51.100.10:443 with the bed's CA, the stand-in webtunnel server behind it, the
// vanilla bridge), in one run. Run it inside the test bed (scripts/bench.sh does):
//
//   scripts/testbed exec --dir DIR env POSTERN_BINARY=... [POSTERN_BASELINE=...] postern-bench webtunnel
//       [--rounds N] [--handshakes N] [--samples N] [--megabytes N]
//
// There is no webtunnel client in Debian to be the peer, so the peer is another Postern binary:
// POSTERN_BASELINE (e.g. a build of an earlier commit, to see what a change did). Both run as
// `postern pt-client`, the managed pluggable transport every version has, so one benchmark binary
// drives either. POSTERN_BINARY defaults to the `postern` beside this binary; without a baseline
// the figures are printed with no ratio. Measured per client:
//   - dial: SOCKS5 CONNECT to the managed client with the bridge's arguments until its success
//     reply, which it sends after the url host answered the upgrade with 101: name lookup, TCP,
//     TLS (certificate checked against the bed's CA), the upgrade request and its answer; and the
//     client process's CPU per dial (/proc). The clients' dials alternate one by one, both
//     processes running, so the machine's load falls on both alike;
//   - through a plain Debian tor with the client as its webtunnel plugin: bootstrap (tor start →
//     "Bootstrapped 100%"), channel (tor's "Bootstrapped 2%" → 15%: the dial plus tor's link
//     handshake through it, free of tor's one-second ticks), time to first byte on new circuits,
//     and N MB down and up to a loopback bulk peer through tor, webtunnel and the exit. Rounds
//     alternate which client goes first.
// Ratios are baseline / postern for times and CPU, postern / baseline for throughput: ≥ 1 means
// POSTERN_BINARY is faster, ≥ 0.91 that it is within 10 % of the baseline.
import Foundation
import TransportBase
import TransportTestSupport

struct WebtunnelBenchmarkError: Error, CustomStringConvertible { let description: String }

struct WebtunnelSample {
    var dial: [Double] = []
    var dialCPU: Double = 0
    var dials = 0
    var firstDial: [Double] = []
    var firstDialCPU: [Double] = []
    var bootstrap: [Double] = []
    var channel: [Double] = []
    var firstByte: [Double] = []
    var download: [Double] = []
    var upload: [Double] = []
}

/// `postern pt-client` as a managed webtunnel client; SOCKS5 endpoint from its CMETHOD line.
func startWebtunnelClient(_ binary: PosternBinary, environment: [String: String]) async throws -> ClientUnderTest {
    let state = FileManager.default.temporaryDirectory.appendingPathComponent("postern-bench-wt-\(UUID().uuidString.prefix(8))")
    let child = try ManagedChildProcess(executable: binary.path, arguments: ["pt-client"], environment: environment.merging([
        "TOR_PT_MANAGED_TRANSPORT_VER": "1",
        "TOR_PT_CLIENT_TRANSPORTS": "webtunnel",
        "TOR_PT_STATE_LOCATION": state.path + "/",
        "TOR_PT_EXIT_ON_STDIN_CLOSE": "1",
    ]) { $1 })
    let lines = try await child.readLines(until: { $0 == "CMETHODS DONE" || $0.hasPrefix("ENV-ERROR") || $0.hasPrefix("VERSION-ERROR") })
    guard let line = lines.first(where: { $0.hasPrefix("CMETHOD webtunnel socks5 ") }) else {
        child.stop()
        throw WebtunnelBenchmarkError(description: "\(binary.label) did not offer webtunnel: \(lines)")
    }
    return ClientUnderTest(label: binary.label, child: child, socks: try TransportEndpoint(parsing: String(line.split(separator: " ")[3])))
}

/// New client processes per client and round whose first dial is measured.
let firstDialsPerRound = 8

func runWebtunnelBenchmark(rounds: Int, handshakes: Int, firstBytes: Int, megabytes: Int) async throws {
    let environment = ProcessInfo.processInfo.environment
    guard environment["TB_WEBTUNNEL"] == "1", let bridge = environment["TB_BRIDGE_WEBTUNNEL"], !bridge.isEmpty,
          let caFile = environment["TB_WEBTUNNEL_CA"], let torrcPath = environment["TB_CLIENT_TORRC"] else {
        throw WebtunnelBenchmarkError(description: "run inside the test bed with its webtunnel stack (namespace mode): scripts/testbed exec --dir DIR postern-bench webtunnel")
    }
    let binaries = PosternBinary.underTest(environment)
    if let missing = binaries.first(where: { !$0.isExecutable }) {
        throw WebtunnelBenchmarkError(description: missing.notExecutableMessage)
    }
    // "webtunnel ADDRESS FINGERPRINT url=... ver=..." → the SOCKS arguments tor would send.
    let fields = bridge.split(separator: " ")
    guard fields.count > 3 else { throw WebtunnelBenchmarkError(description: "TB_BRIDGE_WEBTUNNEL has no arguments") }
    let arguments = fields[3...].joined(separator: ";")
    // The client dials the url host, never the bridge line's address (WebtunnelTransport.dial), so
    // the CONNECT target is a placeholder from TEST-NET-1, as Postern writes for address-less bridges.
    let target = try TransportEndpoint(ipv4: [192, 0, 2, 1], port: 443)
    // The bed's CA: OpenSSL's SSL_CERT_FILE, which both the OpenSSL stream of earlier builds and
    // TransportTLS's certificate check honour; tor hands its environment on to the plugin.
    let trust = ["SSL_CERT_FILE": caFile]

    print("webtunnel benchmark: \(rounds) round(s); per client: \(handshakes) dials per round (alternating), then through tor: bootstrap, \(firstBytes) first-byte samples on new circuits, \(megabytes) MB down and up")
    print("path: client → nginx (TLS, bed CA) on 198.51.100.10:443 → upgrade on the secret path → stand-in webtunnel server → bridge → exit → loopback peer")
    for binary in binaries { print("  \(binary.label): \(binary.path) pt-client") }

    let peer = try BulkPeer(address: try TransportEndpoint(ipv4: [127, 0, 4, 78], port: 8078))
    defer { peer.stop() }
    let baseTorrc = try String(contentsOfFile: torrcPath, encoding: .utf8)
    let bytes = megabytes * 1_000_000
    var results: [String: WebtunnelSample] = [:]
    var isolation = 0

    for round in 1...rounds {
        let order = round % 2 == 1 ? binaries : binaries.reversed()
        // Dials, one by one in turn, both managed clients up.
        var clients: [ClientUnderTest] = []
        defer { for client in clients { client.child.stop() } }
        for binary in order { clients.append(try await startWebtunnelClient(binary, environment: trust)) }
        // One unmeasured dial each: first-use setup (NSS's init, the trust store) is not a dial's cost.
        for client in clients { _ = try await webtunnelDial(client, target: target, arguments: arguments) }
        for _ in 0..<handshakes {
            // Spaced past EndpointGate's pace (2 new connections per ip:port, refilled 2 per second,
            // issue #22's "small footprint"): back to back, a HEAD dial would wait ~500 ms for its
            // turn and the figure would be the gate's, not the dial's (492 ms against b024030's 7 ms
            // in the first run). The baseline has no gate and gets the same spacing.
            try await Task.sleep(for: .milliseconds(550))
            for client in clients {
                let cpuBefore = client.child.cpuSeconds
                let milliseconds = try await webtunnelDial(client, target: target, arguments: arguments)
                results[client.label, default: WebtunnelSample()].dial.append(milliseconds)
                results[client.label, default: WebtunnelSample()].dialCPU += client.child.cpuSeconds - cpuBefore
                results[client.label, default: WebtunnelSample()].dials += 1
            }
        }
        for client in clients {
            client.child.stop()
            let sample = results[client.label]!
            print("  round \(round) \(client.label.padding(toLength: 9, withPad: " ", startingAt: 0)) dial median \(format(median(sample.dial), 1)) ms (so far), CPU \(format(sample.dialCPU / Double(sample.dials) * 1000, 1)) ms per dial")
        }
        clients = []
        // First dials: a new process each time, so no ticket and nothing set up yet.
        for _ in 0..<firstDialsPerRound {
            for binary in order {
                let client = try await startWebtunnelClient(binary, environment: trust)
                defer { client.child.stop() }
                let pid = client.child.process.processIdentifier
                let cpuBefore = threadCPUNanoseconds(pid)
                let milliseconds = try await webtunnelDial(client, target: target, arguments: arguments)
                results[client.label, default: WebtunnelSample()].firstDial.append(milliseconds)
                results[client.label, default: WebtunnelSample()].firstDialCPU.append(Double(threadCPUNanoseconds(pid) - cpuBefore) / 1e6)
            }
        }
        for binary in order {
            let sample = results[binary.label]!
            print("  round \(round) \(binary.label.padding(toLength: 9, withPad: " ", startingAt: 0)) first dial median \(format(median(sample.firstDial), 1)) ms (so far), its CPU median \(format(median(sample.firstDialCPU), 1)) ms")
        }

        for binary in order {
            let tor = try BenchTorClient(label: binary.label, client: [binary.path, "pt-client"], bridge: bridge, baseTorrc: baseTorrc,
                                         socksPort: try freeLoopbackPort(), transport: "webtunnel", environment: trust)
            defer { tor.stop() }
            let socks = try TransportEndpoint(parsing: "127.0.0.1:\(tor.socksPort)")
            var sample = results[binary.label, default: WebtunnelSample()]
            let bootstrap = try await tor.waitForBootstrap(timeout: .seconds(120))
            let channel = tor.secondsBetween("Bootstrapped 2%", "Bootstrapped 15%") ?? .nan
            var firsts: [Double] = []
            let down: Double, up: Double
            do {
                for _ in 0..<firstBytes {
                    isolation += 1
                    firsts.append(try await timeToFirstByte(socks: socks, peer: peer.endpoint, isolation: "bench-wt-ttfb-\(isolation)"))
                }
                isolation += 1
                down = try await bulkThroughTor(socks: socks, peer: peer.endpoint, upload: false, bytes: bytes, isolation: "bench-wt-bulk-\(isolation)")
                up = try await bulkThroughTor(socks: socks, peer: peer.endpoint, upload: true, bytes: bytes, isolation: "bench-wt-bulk-\(isolation)")
            } catch {
                throw WebtunnelBenchmarkError(description: "\(binary.label): \(error)\ntor log:\n\(tor.log.suffix(2000))")
            }
            sample.bootstrap.append(bootstrap)
            sample.channel.append(channel)
            sample.firstByte += firsts
            sample.download.append(down)
            sample.upload.append(up)
            results[binary.label] = sample
            print("    tor's steps (s after its log opened): \(tor.timeline)")
            print("  round \(round) \(binary.label.padding(toLength: 9, withPad: " ", startingAt: 0)) bootstrap \(format(bootstrap)) s, channel \(format(channel * 1000, 0)) ms, first byte median \(format(median(firsts) * 1000, 0)) ms, down \(format(down, 2)) MB/s, up \(format(up, 2)) MB/s")
        }
    }

    print("")
    print("client     dial ms (median, p90)   CPU ms/dial   first dial ms, CPU ms   bootstrap s   channel ms   first byte ms   down MB/s   up MB/s   (medians)")
    for binary in binaries {
        let sample = results[binary.label]!
        let sorted = sample.dial.sorted()
        let p90 = sorted[min(sorted.count - 1, sorted.count * 9 / 10)]
        print("\(binary.label.padding(toLength: 10, withPad: " ", startingAt: 0)) \((format(median(sample.dial), 1) + ", " + format(p90, 1)).padding(toLength: 23, withPad: " ", startingAt: 0)) \(format(sample.dialCPU / Double(sample.dials) * 1000, 1).padding(toLength: 13, withPad: " ", startingAt: 0)) \((format(median(sample.firstDial), 1) + ", " + format(median(sample.firstDialCPU), 1)).padding(toLength: 23, withPad: " ", startingAt: 0)) \(format(median(sample.bootstrap)).padding(toLength: 13, withPad: " ", startingAt: 0)) \(format(median(sample.channel) * 1000, 0).padding(toLength: 12, withPad: " ", startingAt: 0)) \(format(median(sample.firstByte) * 1000, 0).padding(toLength: 15, withPad: " ", startingAt: 0)) \(format(median(sample.download)).padding(toLength: 11, withPad: " ", startingAt: 0)) \(format(median(sample.upload)))")
    }
    print("(dial: SOCKS CONNECT → success reply, i.e. lookup, TCP, TLS and the upgrade; CPU: the pt-client process's over its dials; first dial: a new pt-client's first, full handshake, no ticket; channel: tor's \"Bootstrapped 2%\" → 15%)")
    print("")
    guard binaries.count == 2 else {
        print("RESULT webtunnel (no POSTERN_BASELINE, no ratio): dial median \(format(median(results["postern"]!.dial), 1)) ms, first byte \(format(median(results["postern"]!.firstByte) * 1000, 0)) ms, down \(format(median(results["postern"]!.download))) MB/s, up \(format(median(results["postern"]!.upload))) MB/s")
        return
    }
    let ours = results["postern"]!, theirs = results["baseline"]!
    let dialRatio = median(theirs.dial) / median(ours.dial)
    let cpuRatio = (theirs.dialCPU / Double(theirs.dials)) / (ours.dialCPU / Double(ours.dials))
    let firstDialRatio = median(theirs.firstDial) / median(ours.firstDial)
    let firstDialCPURatio = median(theirs.firstDialCPU) / median(ours.firstDialCPU)
    let bootstrapRatio = median(theirs.bootstrap) / median(ours.bootstrap)
    let channelRatio = median(theirs.channel) / median(ours.channel)
    let firstByteRatio = median(theirs.firstByte) / median(ours.firstByte)
    let downRatio = median(ours.download) / median(theirs.download)
    let upRatio = median(ours.upload) / median(theirs.upload)
    print("RESULT webtunnel ratio (baseline / postern for times, postern / baseline for throughput; ≥ 1 means postern is faster, ≥ 0.91 within 10 %) dial \(format(dialRatio)); CPU per dial \(format(cpuRatio)); first dial \(format(firstDialRatio)), its CPU \(format(firstDialCPURatio)); bootstrap \(format(bootstrapRatio)); channel \(format(channelRatio)); first byte \(format(firstByteRatio)); down \(format(downRatio)) up \(format(upRatio))")
}

/// CPU time of `pid`'s live threads in nanoseconds, from /proc/PID/task/*/schedstat (the
/// scheduler's own clock): /proc/PID/stat counts in 10 ms ticks, coarser than one dial.
func threadCPUNanoseconds(_ pid: Int32) -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    return tasks.reduce(0) { total, task in
        let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8)) ?? ""
        return total + (text.split(separator: " ").first.flatMap { Int($0) } ?? 0)
    }
}

/// One SOCKS dial through a managed webtunnel client: milliseconds until its success reply.
func webtunnelDial(_ client: ClientUnderTest, target: TransportEndpoint, arguments: String) async throws -> Double {
    let started = ContinuousClock.now
    let socket = try await socksConnect(via: client.socks, to: target, arguments: arguments)
    let elapsed = seconds(ContinuousClock.now - started) * 1000
    socket.close()
    return elapsed
}
