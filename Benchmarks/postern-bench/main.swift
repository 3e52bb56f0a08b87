// postern-bench: measured comparisons against peers run in the same process tree.
//
//   swift run -c release postern-bench obfs4 [--megabytes N] [--handshakes N] [--rounds N]
//   postern-bench memory                                  (inside the test bed; MemoryBenchmark.swift)
//   postern-bench snowflake [--rounds N] [--megabytes N] [--samples N]   (inside the test bed; see
//                                                                       SnowflakeBenchmark.swift)
//   postern-bench tls [--handshakes N] [--rounds N]       (TransportTLS against OpenSSL's client;
//                                                         TLSHandshakeBenchmark.swift)
//   postern-bench webtunnel [--rounds N] [--handshakes N] [--samples N] [--megabytes N]
//                                                         (inside the test bed; `postern pt-client`
//                                                         against POSTERN_BASELINE's;
//                                                         WebtunnelBenchmark.swift)
//   postern-bench dnstt [--rounds N] [--samples N] [--kilobytes N] [--only udp,dot,doh]
//                                                         (inside the test bed; `postern run` through
//                                                         its dnstt lines, against POSTERN_BASELINE's;
//                                                         DnsttBenchmark.swift)
//
// `obfs4` starts Debian's obfs4proxy as a managed obfs4 SERVER in front of a loopback bulk peer,
// then drives the same transfers through two managed obfs4 CLIENTS over their SOCKS5 listeners:
// ours (this binary re-executed as `pt-client`, i.e. ManagedClientProxy) and obfs4proxy's own.
// Both clients are separate processes, so their CPU time is read from /proc and compared fairly.
// Only 127.0.0.1 is used.
import Foundation
import Obfs4Transport
import SnowflakeTransport
import Synchronization
import TransportBase
import TransportTestSupport

struct UsageError: Error, CustomStringConvertible { let description: String }

/// Bulk peer standing in for the ORPort. The client sends 'U' + size(8) then size bytes (we answer
/// one byte when all arrived), or 'D' + size(8) and we send size bytes.
final class BulkPeer: @unchecked Sendable {
    let listener: LoopbackListener
    private var task: Task<Void, Never>?
    static let block = [UInt8]((0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 2654435761 >> 13) })

    /// On 127.0.0.1, or on `address` (another 127.x address) when given.
    init(address: TransportEndpoint? = nil) throws {
        listener = try address.map { try LoopbackListener(loopbackAddress: $0) } ?? LoopbackListener()
        let listener = self.listener
        task = Task {
            await withDiscardingTaskGroup { group in
                while let socket = try? await listener.accept() {
                    group.addTask { try? await BulkPeer.serve(socket); socket.close() }
                }
            }
        }
    }

    static func serve(_ socket: TCPSocket) async throws {
        var header: [UInt8] = []
        while header.count < 9 {
            let chunk = try await socket.read(maximumCount: 9 - header.count)
            if chunk.isEmpty { return }
            header += chunk
        }
        let size = header[1...].reduce(0) { $0 << 8 | Int($1) }
        if header[0] == UInt8(ascii: "U") {
            var received = 0
            while received < size {
                let chunk = try await socket.read(maximumCount: 65536)
                if chunk.isEmpty { return }
                received += chunk.count
            }
            try await socket.write([1])
        } else {
            var sent = 0
            while sent < size {
                let count = min(block.count, size - sent)
                try await socket.write(count == block.count ? block : Array(block.prefix(count)))
                sent += count
            }
        }
        _ = try? await socket.read(maximumCount: 1)
    }

    var port: UInt16 { listener.port }
    var endpoint: TransportEndpoint { listener.endpoint }
    func stop() { listener.close(); task?.cancel() }
}

struct ClientUnderTest {
    let label: String
    let child: ManagedChildProcess
    let socks: TransportEndpoint
}

func startManagedClient(label: String, executable: String, arguments: [String]) async throws -> ClientUnderTest {
    let state = FileManager.default.temporaryDirectory.appendingPathComponent("postern-bench-\(UUID().uuidString)")
    let child = try ManagedChildProcess(executable: executable, arguments: arguments, environment: [
        "TOR_PT_MANAGED_TRANSPORT_VER": "1",
        "TOR_PT_CLIENT_TRANSPORTS": "obfs4",
        "TOR_PT_STATE_LOCATION": state.path + "/",
        "TOR_PT_EXIT_ON_STDIN_CLOSE": "1",
    ])
    let lines = try await child.readLines(until: { $0 == "CMETHODS DONE" || $0.hasPrefix("ENV-ERROR") || $0.hasPrefix("VERSION-ERROR") })
    guard let line = lines.first(where: { $0.hasPrefix("CMETHOD obfs4 socks5 ") }) else {
        child.stop()
        throw UsageError(description: "\(label) did not offer obfs4: \(lines)")
    }
    return ClientUnderTest(label: label, child: child, socks: try TransportEndpoint(parsing: String(line.split(separator: " ")[3])))
}

/// SOCKS5 CONNECT with the bridge arguments in RFC 1929 fields, exactly as tor sends them.
func socksConnect(via proxy: TransportEndpoint, to target: TransportEndpoint, arguments: String,
                  connected: (TCPSocket) -> Void = { _ in }) async throws -> TCPSocket {
    let socket = try await TCPSocket.connect(to: proxy, timeout: .seconds(10))
    connected(socket)
    let argumentBytes = Array(arguments.utf8)
    let username = Array(argumentBytes.prefix(255))
    let password = argumentBytes.count > 255 ? Array(argumentBytes.dropFirst(255)) : [0]
    try await socket.write([5, 1, 2])
    var reader = Reader(socket: socket)
    guard try await reader.read(2) == [5, 2] else { throw UsageError(description: "SOCKS method refused") }
    try await socket.write([1, UInt8(username.count)] + username + [UInt8(password.count)] + password)
    guard try await reader.read(2) == [1, 0] else { throw UsageError(description: "SOCKS arguments refused") }
    try await socket.write([5, 1, 0, 1] + target.addressBytes + [UInt8(target.port >> 8), UInt8(target.port & 0xFF)])
    let reply = try await reader.read(10)
    guard reply.count == 10, reply[1] == 0 else { throw UsageError(description: "SOCKS CONNECT failed: \(reply)") }
    return socket
}

struct Reader {
    let socket: TCPSocket
    mutating func read(_ count: Int) async throws -> [UInt8] {
        var out: [UInt8] = []
        while out.count < count {
            let chunk = try await socket.read(maximumCount: count - out.count)
            if chunk.isEmpty { break }
            out += chunk
        }
        return out
    }
}

struct BulkTransferError: Error, CustomStringConvertible { let description: String }

/// Asks the bulk peer for `bytes` (download) or sends them (upload, which the peer acknowledges
/// with one byte), over a stream already opened to it.
func exchangeWithBulkPeer(on socket: TCPSocket, upload: Bool, bytes: Int) async throws {
    try await socket.write(sizeHeader(upload ? "U" : "D", bytes))
    if upload {
        var sent = 0
        while sent < bytes {
            let count = min(BulkPeer.block.count, bytes - sent)
            try await socket.write(count == BulkPeer.block.count ? BulkPeer.block : Array(BulkPeer.block.prefix(count)))
            sent += count
        }
        var reader = Reader(socket: socket)
        guard try await reader.read(1) == [1] else { throw BulkTransferError(description: "upload not acknowledged") }
    } else {
        var received = 0
        while received < bytes {
            let chunk = try await socket.read(maximumCount: 65536)
            if chunk.isEmpty { throw BulkTransferError(description: "download ended after \(received) bytes") }
            received += chunk.count
        }
    }
}

func sizeHeader(_ kind: Character, _ size: Int) -> [UInt8] {
    [kind.asciiValue!] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: size >> ($0 * 8)) }
}

struct Measurement {
    var seconds: Double
    var cpuSeconds: Double
    var bytes: Int
    var megabytesPerSecond: Double { Double(bytes) / seconds / 1_000_000 }
    var cpuPer100MB: Double { cpuSeconds / (Double(bytes) / 100_000_000) }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func transfer(_ client: ClientUnderTest, upload: Bool, bytes: Int, bridge: TransportEndpoint, arguments: String) async throws -> Measurement {
    let cpuBefore = client.child.cpuSeconds
    let started = ContinuousClock.now
    let socket = try await socksConnect(via: client.socks, to: bridge, arguments: arguments)
    defer { socket.close() }
    try await exchangeWithBulkPeer(on: socket, upload: upload, bytes: bytes)
    let elapsed = seconds(ContinuousClock.now - started)
    return Measurement(seconds: elapsed, cpuSeconds: client.child.cpuSeconds - cpuBefore, bytes: bytes)
}

func handshakeLatencies(_ client: ClientUnderTest, count: Int, bridge: TransportEndpoint, arguments: String) async throws -> [Double] {
    var samples: [Double] = []
    for _ in 0..<count {
        let started = ContinuousClock.now
        let socket = try await socksConnect(via: client.socks, to: bridge, arguments: arguments)
        samples.append(seconds(ContinuousClock.now - started) * 1000)
        socket.close()
    }
    return samples.sorted()
}

func format(_ value: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", value) }

func runObfs4Benchmark(megabytes: Int, handshakes: Int, rounds: Int) async throws {
    let peer = try BulkPeer()
    defer { peer.stop() }
    let bridge = try await Obfs4ProxyServer(orPort: peer.port, iatMode: 0)
    defer { bridge.stop() }
    let arguments = bridge.arguments.description
    let selfPath = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    let ours = try await startManagedClient(label: "postern obfs4", executable: selfPath, arguments: ["pt-client"])
    defer { ours.child.stop() }
    let theirs = try await startManagedClient(label: "obfs4proxy", executable: Obfs4ProxyServer.executable, arguments: [])
    defer { theirs.child.stop() }

    let bytes = megabytes * 1_000_000
    print("obfs4 benchmark: \(megabytes) MB per transfer, \(rounds) round(s), \(handshakes) handshakes per client")
    print("server: obfs4proxy \(bridge.endpoint.isLoopback ? "on 127.0.0.1" : ""), iat-mode=0; clients: managed processes, SOCKS5 + RFC 1929 arguments")

    var results: [String: [String: [Measurement]]] = [:]
    for round in 1...rounds {
        // Alternate who goes first so warm caches favour neither.
        let order = round % 2 == 1 ? [ours, theirs] : [theirs, ours]
        for client in order {
            for upload in [true, false] {
                let measurement = try await transfer(client, upload: upload, bytes: bytes, bridge: bridge.endpoint, arguments: arguments)
                results[client.label, default: [:]][upload ? "upload" : "download", default: []].append(measurement)
                print("  round \(round) \(client.label.padding(toLength: 14, withPad: " ", startingAt: 0)) \(upload ? "upload  " : "download") \(format(measurement.megabytesPerSecond, 1)) MB/s, \(format(measurement.seconds)) s, client CPU \(format(measurement.cpuSeconds)) s")
            }
        }
    }

    print("")
    print("direction  client          MB/s     CPU s/100MB")
    var throughputRatios: [Double] = []
    var cpuRatios: [Double] = []
    for direction in ["upload", "download"] {
        var summary: [String: (Double, Double)] = [:]
        for client in [ours, theirs] {
            let runs = results[client.label]![direction]!
            let totalBytes = runs.reduce(0) { $0 + $1.bytes }
            let totalSeconds = runs.reduce(0) { $0 + $1.seconds }
            let totalCPU = runs.reduce(0) { $0 + $1.cpuSeconds }
            let rate = Double(totalBytes) / totalSeconds / 1_000_000
            let cpu = totalCPU / (Double(totalBytes) / 100_000_000)
            summary[client.label] = (rate, cpu)
            print("\(direction.padding(toLength: 10, withPad: " ", startingAt: 0)) \(client.label.padding(toLength: 15, withPad: " ", startingAt: 0)) \(format(rate, 1).padding(toLength: 8, withPad: " ", startingAt: 0)) \(format(cpu, 3))")
        }
        let (ourRate, ourCPU) = summary[ours.label]!
        let (theirRate, theirCPU) = summary[theirs.label]!
        throughputRatios.append(ourRate / theirRate)
        cpuRatios.append(theirCPU / ourCPU)
        print("  \(direction): throughput ratio (postern / obfs4proxy) = \(format(ourRate / theirRate)); CPU efficiency ratio (obfs4proxy CPU / postern CPU) = \(format(theirCPU / ourCPU))")
    }

    let ourLatency = try await handshakeLatencies(ours, count: handshakes, bridge: bridge.endpoint, arguments: arguments)
    let theirLatency = try await handshakeLatencies(theirs, count: handshakes, bridge: bridge.endpoint, arguments: arguments)
    func median(_ samples: [Double]) -> Double { samples[samples.count / 2] }
    func p90(_ samples: [Double]) -> Double { samples[min(samples.count - 1, samples.count * 9 / 10)] }
    print("")
    print("handshake latency (SOCKS connect → success reply, obfs4 handshake included), \(handshakes) samples:")
    print("  postern obfs4   median \(format(median(ourLatency))) ms, p90 \(format(p90(ourLatency))) ms")
    print("  obfs4proxy      median \(format(median(theirLatency))) ms, p90 \(format(p90(theirLatency))) ms")
    print("  latency ratio (obfs4proxy / postern, ≥ 1 means we are faster) = \(format(median(theirLatency) / median(ourLatency)))")

    // The cipher alone on the same bytes, and our framing without sockets, in this process: what
    // the client's CPU per 100 MB above is made of.
    let frames = try Obfs4FrameBenchmark.run(bytes: bytes)
    let scale = 100_000_000 / Double(frames.bytes)
    let ourUploadCPU = results[ours.label]!["upload"]!.reduce(0) { $0 + $1.cpuSeconds } / Double(rounds) / (Double(bytes) / 100_000_000)
    let ourDownloadCPU = results[ours.label]!["download"]!.reduce(0) { $0 + $1.cpuSeconds } / Double(rounds) / (Double(bytes) / 100_000_000)
    let theirUploadCPU = results[theirs.label]!["upload"]!.reduce(0) { $0 + $1.cpuSeconds } / Double(rounds) / (Double(bytes) / 100_000_000)
    let theirDownloadCPU = results[theirs.label]!["download"]!.reduce(0) { $0 + $1.cpuSeconds } / Double(rounds) / (Double(bytes) / 100_000_000)
    print("")
    print("CPU s per 100 MB        cipher alone   our framing   postern client   obfs4proxy client")
    print("  upload (seal)         \(format(frames.cipherSealSeconds * scale, 3).padding(toLength: 14, withPad: " ", startingAt: 0)) \(format(frames.framingSealSeconds * scale, 3).padding(toLength: 13, withPad: " ", startingAt: 0)) \(format(ourUploadCPU, 3).padding(toLength: 16, withPad: " ", startingAt: 0)) \(format(theirUploadCPU, 3))")
    print("  download (open)       \(format(frames.cipherOpenSeconds * scale, 3).padding(toLength: 14, withPad: " ", startingAt: 0)) \(format(frames.framingOpenSeconds * scale, 3).padding(toLength: 13, withPad: " ", startingAt: 0)) \(format(ourDownloadCPU, 3).padding(toLength: 16, withPad: " ", startingAt: 0)) \(format(theirDownloadCPU, 3))")
    print("  (cipher alone: libsodium crypto_secretbox_easy/_open_easy per 1430-byte packet; our framing: FrameEncoder/FrameDecoder in memory; clients: process CPU, user + system, sockets included)")
    // Per frame, against libsodium's own speed on the same packets. The clients' figures assume
    // full frames (1427 payload bytes), which is what a bulk transfer gets from obfs4proxy.
    let nanosecondsPerFrame = { (seconds: Double) in format(seconds / Double(frames.frames) * 1e9, 0) }
    let clientFramesPer100MB = 100_000_000 / Double(Obfs4Framing.maximumPayloadLength)
    print("  per frame (ns): seal cipher \(nanosecondsPerFrame(frames.cipherSealSeconds)), framing \(nanosecondsPerFrame(frames.framingSealSeconds)), postern client \(format(ourUploadCPU / clientFramesPer100MB * 1e9, 0)), obfs4proxy client \(format(theirUploadCPU / clientFramesPer100MB * 1e9, 0)); open cipher \(nanosecondsPerFrame(frames.cipherOpenSeconds)), framing \(nanosecondsPerFrame(frames.framingOpenSeconds)), postern client \(format(ourDownloadCPU / clientFramesPer100MB * 1e9, 0)), obfs4proxy client \(format(theirDownloadCPU / clientFramesPer100MB * 1e9, 0))")
    print("  framing / cipher: seal \(format(frames.framingSealSeconds / frames.cipherSealSeconds)), open \(format(frames.framingOpenSeconds / frames.cipherOpenSeconds)); client CPU / cipher: upload \(format(ourUploadCPU / (frames.cipherSealSeconds * scale))), download \(format(ourDownloadCPU / (frames.cipherOpenSeconds * scale)))")
    print("")
    print("RESULT obfs4 client CPU per 100 MB (postern / obfs4proxy, ≤ 0.5 is the goal) upload \(format(ourUploadCPU / theirUploadCPU)) download \(format(ourDownloadCPU / theirDownloadCPU)); postern / cipher alone upload \(format(ourUploadCPU / (frames.cipherSealSeconds * scale))) download \(format(ourDownloadCPU / (frames.cipherOpenSeconds * scale)))")
    print("RESULT throughput ratio upload \(format(throughputRatios[0])) download \(format(throughputRatios[1])); CPU ratio upload \(format(cpuRatios[0])) download \(format(cpuRatios[1]))")
}

/// "--name N" pairs with N > 0, each name one of `defaults`' keys; anything else exits 64 naming the word.
func positiveOptions(_ words: [String], defaults: [String: Int]) -> [String: Int] {
    var values = defaults
    var index = 0
    while index < words.count {
        let flag = words[index]
        let number = index + 1 < words.count ? Int(words[index + 1]) : nil
        guard let number, number > 0, values[flag] != nil else {
            let expected = defaults.keys.sorted().map { "\($0) N" }.joined(separator: ", ")
            FileHandle.standardError.write(Data("postern-bench: bad argument \"\(flag)\" (expected \(expected); N > 0)\n".utf8))
            exit(64)
        }
        values[flag] = number
        index += 2
    }
    return values
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "pt-client":
    // The managed client proxy, as `postern pt-client` will run it.
    let registry = try TransportRegistry([Obfs4Transport(), SnowflakeTransport()])
    exit(await ManagedClientProxy.run(registry: registry, environment: ProcessInfo.processInfo.environment))
case "obfs4":
    let options = positiveOptions(Array(arguments.dropFirst()), defaults: ["--megabytes": 100, "--handshakes": 30, "--rounds": 1])
    do {
        try await runObfs4Benchmark(megabytes: options["--megabytes"]!, handshakes: options["--handshakes"]!, rounds: options["--rounds"]!)
    } catch {
        FileHandle.standardError.write(Data("postern-bench: \(error)\n".utf8))
        exit(1)
    }
case "frames":
    // Only the in-process part of `obfs4`: the cipher alone against our framing.
    let options = positiveOptions(Array(arguments.dropFirst()), defaults: ["--megabytes": 100])
    let frames = try Obfs4FrameBenchmark.run(bytes: options["--megabytes"]! * 1_000_000)
    let scale = 100_000_000 / Double(frames.bytes)
    print("CPU s per 100 MB: seal cipher \(format(frames.cipherSealSeconds * scale, 3)) framing \(format(frames.framingSealSeconds * scale, 3)); open cipher \(format(frames.cipherOpenSeconds * scale, 3)) framing \(format(frames.framingOpenSeconds * scale, 3))")
    let perFrame = { (seconds: Double) in format(seconds / Double(frames.frames) * 1e9, 0) }
    print("ns per frame: seal cipher \(perFrame(frames.cipherSealSeconds)) framing \(perFrame(frames.framingSealSeconds)); open cipher \(perFrame(frames.cipherOpenSeconds)) framing \(perFrame(frames.framingOpenSeconds))")
case "memory":
    _ = positiveOptions(Array(arguments.dropFirst()), defaults: [:])
    do {
        try await runMemoryBenchmark()
    } catch {
        FileHandle.standardError.write(Data("postern-bench: \(error)\n".utf8))
        exit(1)
    }
case "snowflake":
    let options = positiveOptions(Array(arguments.dropFirst()), defaults: ["--rounds": 2, "--megabytes": 10, "--samples": 5])
    do {
        try await runSnowflakeBenchmark(rounds: options["--rounds"]!, megabytes: options["--megabytes"]!, firstBytes: options["--samples"]!)
    } catch {
        FileHandle.standardError.write(Data("postern-bench: \(error)\n".utf8))
        exit(1)
    }
case "tls":
    var words = Array(arguments.dropFirst())
    var only: TLSHandshakeClient?
    if let at = words.firstIndex(of: "--only") {
        guard at + 1 < words.count, let client = TLSHandshakeClient.allCases.first(where: { $0.shortName == words[at + 1] }) else {
            FileHandle.standardError.write(Data("postern-bench: --only takes one of \(TLSHandshakeClient.allCases.map(\.shortName).joined(separator: ", "))\n".utf8))
            exit(64)
        }
        only = client
        words.removeSubrange(at...at + 1)
    }
    let options = positiveOptions(words, defaults: ["--handshakes": 200, "--rounds": 3])
    do {
        try await runTLSHandshakeBenchmark(handshakes: options["--handshakes"]!, rounds: options["--rounds"]!, only: only)
    } catch {
        FileHandle.standardError.write(Data("postern-bench: \(error)\n".utf8))
        exit(1)
    }
case "webtunnel":
    let options = positiveOptions(Array(arguments.dropFirst()), defaults: ["--rounds": 2, "--handshakes": 40, "--samples": 5, "--megabytes": 10])
    do {
        try await runWebtunnelBenchmark(rounds: options["--rounds"]!, handshakes: options["--handshakes"]!,
                                        firstBytes: options["--samples"]!, megabytes: options["--megabytes"]!)
    } catch {
        FileHandle.standardError.write(Data("postern-bench: \(error)\n".utf8))
        exit(1)
    }
case "dnstt":
    var words = Array(arguments.dropFirst())
    var only: Set<String>?
    if let at = words.firstIndex(of: "--only") {
        let names = at + 1 < words.count ? Set(words[at + 1].split(separator: ",").map(String.init)) : []
        guard !names.isEmpty, names.isSubset(of: ["udp", "dot", "doh"]) else {
            FileHandle.standardError.write(Data("postern-bench: --only takes udp, dot and doh, comma-separated\n".utf8))
            exit(64)
        }
        only = names
        words.removeSubrange(at...at + 1)
    }
    let options = positiveOptions(words, defaults: ["--rounds": 1, "--samples": 3, "--kilobytes": 5000])
    do {
        try await runDnsttBenchmark(rounds: options["--rounds"]!, firstBytes: options["--samples"]!,
                                    kilobytes: options["--kilobytes"]!, only: only)
    } catch {
        FileHandle.standardError.write(Data("postern-bench: \(error)\n".utf8))
        exit(1)
    }
case "assist":
    var only: Set<String>?
    let words = Array(arguments.dropFirst())
    if let at = words.firstIndex(of: "--only") {
        guard at + 1 < words.count else {
            FileHandle.standardError.write(Data("postern-bench: --only takes censor names, e.g. fet,freeze,burst\n".utf8))
            exit(64)
        }
        only = Set(words[at + 1].split(separator: ",").map(String.init))
    }
    do {
        try AssistBenchmark(only: only).run()
    } catch {
        FileHandle.standardError.write(Data("postern-bench: \(error)\n".utf8))
        exit(1)
    }
case "--help", "-h", "help":
    print("usage: postern-bench obfs4 [--megabytes N] [--handshakes N] [--rounds N]\n       postern-bench memory   (inside the test bed)\n       postern-bench snowflake [--rounds N] [--megabytes N] [--samples N]   (inside the test bed: scripts/bench-snowflake.sh)\n       postern-bench tls [--handshakes N] [--rounds N] [--only firefox-esr|randomized-alpn|randomized-noalpn|openssl]\n       postern-bench webtunnel [--rounds N] [--handshakes N] [--samples N] [--megabytes N]   (inside the test bed; POSTERN_BINARY, POSTERN_BASELINE)\n       postern-bench dnstt [--rounds N] [--samples N] [--kilobytes N] [--only udp,dot,doh]   (inside the test bed; POSTERN_BINARY, POSTERN_BASELINE)\n       postern-bench assist [--only none,block-tor,block-tor-and-bridges,fet,freeze,burst]   (inside the test bed: scripts/bench-assist.sh)")
default:
    FileHandle.standardError.write(Data("usage: postern-bench obfs4 [--megabytes N] [--handshakes N] [--rounds N]\n       postern-bench memory\n       postern-bench snowflake [--rounds N] [--megabytes N] [--samples N]\n       postern-bench tls [--handshakes N] [--rounds N]\n       postern-bench webtunnel [--rounds N] [--handshakes N] [--samples N] [--megabytes N]\n       postern-bench dnstt [--rounds N] [--samples N] [--kilobytes N] [--only udp,dot,doh]\n       postern-bench assist [--only CENSOR,...]\n".utf8))
    exit(64)
}
