// postern-bench tls: the TLS handshake of TransportTLS (NSS, the hello of a browser profile)
// against OpenSSL's client with its default hello (what every Postern TLS connection sent before
// TransportTLS), both against the same `openssl s_server` on 127.0.0.1, in one run.
//
// Each sample is a TCP connect plus a full handshake (certificate verified against the same CA,
// no resumption on either side: TransportTLS is told not to (`resumesSessions: false`; it resumes
// only with a ticket read from an earlier connection, and these close before reading), and a fresh
// OpenSSL SSL without a saved session cannot), then close. s_server serves one connection at a time, so the clients
// take turns, one handshake each in turn, the order rotating between rounds: on a shared machine
// the load changes within seconds, and blocks of one client's samples caught it unevenly (one run
// at load 15 put OpenSSL's median above NSS's). Both clients run in this process, one at a time,
// so the process's CPU time over a sample is that client's (plus idle threads' wakeups): the CPU
// per handshake, which other processes' load moves far less than wall time.
import COpenSSL
import Foundation
import PosternTestSupport
import TransportBase
import TransportTLS

/// OpenSSL's TLS client with its defaults (the cipher suites, groups and extensions OpenSSL 3.0
/// offers unconfigured), SNI and the server's name checked, on a blocking socket.
final class OpenSSLHandshakeClient {
    private let context: OpaquePointer
    /// No handshake waits on the server longer than this (a send or receive timeout on the socket).
    static let ioTimeoutSeconds = 10

    init(caFile: String) throws {
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw UsageError(description: "SSL_CTX_new failed") }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else {
            SSL_CTX_free(context)
            throw UsageError(description: "OpenSSL could not read the CA file")
        }
        self.context = context
    }

    deinit { SSL_CTX_free(context) }

    /// Connects to 127.0.0.1:`port` and completes a handshake with `serverName` as SNI and as the
    /// name the certificate must carry.
    func handshake(port: UInt16, serverName: String) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw UsageError(description: "socket: errno \(errno)") }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: Self.ioTimeoutSeconds, tv_usec: 0)
        for option in [SO_RCVTIMEO, SO_SNDTIMEO] {
            setsockopt(descriptor, SOL_SOCKET, option, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw UsageError(description: "connect: errno \(errno)") }
        guard let ssl = SSL_new(context) else { throw UsageError(description: "SSL_new failed") }
        defer { SSL_free(ssl) }
        SSL_set_fd(ssl, descriptor)
        let named = serverName.withCString { name in
            // SSL_set_tlsext_host_name is a macro over SSL_ctrl.
            SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, Int(TLSEXT_NAMETYPE_host_name), UnsafeMutableRawPointer(mutating: name)) == 1
                && SSL_set1_host(ssl, name) == 1
        }
        guard named else { throw UsageError(description: "OpenSSL refused the server name") }
        guard SSL_connect(ssl) == 1 else {
            let reason = ERR_get_error()
            ERR_clear_error()
            throw UsageError(description: "OpenSSL handshake failed (error \(reason), verify result \(SSL_get_verify_result(ssl)))")
        }
        _ = SSL_shutdown(ssl)
    }
}

enum TLSHandshakeClient: CaseIterable {
    case nssFirefoxESR, nssRandomizedALPN, nssRandomizedNoALPN, openSSL

    /// The clients the comparison run measures (randomized-noalpn, webtunnel's default, only alone).
    static let compared: [TLSHandshakeClient] = [.nssFirefoxESR, .nssRandomizedALPN, .openSSL]

    var label: String {
        switch self {
        case .nssFirefoxESR: "postern firefox-esr"
        case .nssRandomizedALPN: "postern randomized-alpn"
        case .nssRandomizedNoALPN: "postern randomized-noalpn"
        case .openSSL: "openssl default"
        }
    }

    /// The name `--only` takes.
    var shortName: String {
        switch self {
        case .nssFirefoxESR: "firefox-esr"
        case .nssRandomizedALPN: "randomized-alpn"
        case .nssRandomizedNoALPN: "randomized-noalpn"
        case .openSSL: "openssl"
        }
    }

    var profile: BrowserTLSProfile? {
        switch self {
        case .nssFirefoxESR: .firefoxESR
        case .nssRandomizedALPN: .randomizedALPN
        case .nssRandomizedNoALPN: .randomizedNoALPN
        case .openSSL: nil
        }
    }
}

/// `only`: one client alone, its handshakes back to back and no comparison (for counting a
/// handshake's instructions: `valgrind --tool=callgrind` or `perf stat -e instructions:u` over two
/// runs with different `handshakes`, the difference divided by theirs; docs/PERFORMANCE.md).
func runTLSHandshakeBenchmark(handshakes: Int, rounds: Int, only: TLSHandshakeClient? = nil) async throws {
    // With `only`, POSTERN_BENCH_TLS_PORT and POSTERN_BENCH_TLS_CA name a server already running
    // on 127.0.0.1 (valgrind cannot start the openssl processes: scripts/tls-instructions.sh).
    let environment = ProcessInfo.processInfo.environment
    let external = only == nil ? nil : environment["POSTERN_BENCH_TLS_PORT"].flatMap { UInt16($0) }.flatMap { port in
        environment["POSTERN_BENCH_TLS_CA"].map { (port: port, caFile: $0) }
    }
    var certificates: TestCertificates?
    var server: OpenSSLServer?
    defer {
        server?.stop()
        certificates?.remove()
    }
    let port: UInt16
    let caFile: String
    if let external {
        (port, caFile) = (external.port, external.caFile)
    } else {
        let made = try await TestCertificates.make()
        certificates = made
        // -www: s_server answers one connection at a time and goes back to accept when a client leaves.
        let started = try OpenSSLServer(certificates: made, arguments: ["-www", "-alpn", "h2,http/1.1"])
        server = started
        port = try await started.port()
        caFile = made.caFile
    }
    let endpoint = try TransportEndpoint(parsing: "127.0.0.1:\(port)")
    let openSSL = try OpenSSLHandshakeClient(caFile: caFile)

    /// Wall and process CPU milliseconds of one sample.
    func once(_ client: TLSHandshakeClient) async throws -> (wall: Double, cpu: Double) {
        let started = ContinuousClock.now
        let cpuStarted = processCPUSeconds()
        switch client {
        case .openSSL:
            try openSSL.handshake(port: port, serverName: TestCertificates.serverName)
        case .nssFirefoxESR, .nssRandomizedALPN, .nssRandomizedNoALPN:
            let profile = client.profile ?? .firefoxESR
            let socket = try await TCPSocket.connect(to: endpoint, timeout: .seconds(10))
            do {
                let stream = try await BrowserTLSStream.handshake(over: socket, configuration: BrowserTLSConfiguration(
                    serverName: TestCertificates.serverName, profile: profile, caFile: caFile, handshakeTimeout: .seconds(10),
                    resumesSessions: false))
                stream.close()
            } catch {
                socket.close()
                throw error
            }
        }
        return (seconds(ContinuousClock.now - started) * 1000, (processCPUSeconds() - cpuStarted) * 1000)
    }

    if let only {
        _ = try await once(only)  // unmeasured: one-time setup
        var cpu = 0.0
        for _ in 0..<handshakes * rounds { cpu += try await once(only).cpu }
        print("RESULT tls \(only.shortName) alone: \(handshakes * rounds) handshakes, CPU ms per handshake \(format(cpu / Double(handshakes * rounds), 3))")
        return
    }
    print("TLS handshake benchmark: \(handshakes) handshakes per client per round, \(rounds) round(s)")
    print("server: openssl s_server on 127.0.0.1 (\(String(cString: OpenSSL_version(OPENSSL_VERSION)))), P-256 certificate from a test CA; each sample = TCP connect + full handshake, verified, then close")
    let clients = TLSHandshakeClient.compared
    // One unmeasured handshake each: NSS's and OpenSSL's one-time setup is not a handshake's cost.
    for client in clients { _ = try await once(client) }
    var samples: [TLSHandshakeClient: [Double]] = [:]
    var cpu: [TLSHandshakeClient: [Double]] = [:]
    for round in 1...rounds {
        let shift = (round - 1) % clients.count
        for _ in 0..<handshakes {
            for client in Array(clients[shift...] + clients[..<shift]) {
                let sample = try await once(client)
                samples[client, default: []].append(sample.wall)
                cpu[client, default: []].append(sample.cpu)
            }
        }
    }

    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    // The mean, not the median: the clock's granularity and other threads' wakeups make single
    // samples coarse, their sum is not.
    func mean(_ values: [Double]) -> Double { values.reduce(0, +) / Double(max(values.count, 1)) }
    func p90(_ values: [Double]) -> Double { values.sorted()[min(values.count - 1, values.count * 9 / 10)] }
    print("")
    print("client                     median ms   p90 ms    CPU ms per handshake (mean, this process)")
    for client in clients {
        let values = samples[client] ?? []
        print("  \(client.label.padding(toLength: 25, withPad: " ", startingAt: 0)) \(format(median(values), 3).padding(toLength: 11, withPad: " ", startingAt: 0)) \(format(p90(values), 3).padding(toLength: 9, withPad: " ", startingAt: 0)) \(format(mean(cpu[client] ?? []), 3))")
    }
    let openSSLMedian = median(samples[.openSSL] ?? [])
    let firefoxRatio = openSSLMedian / median(samples[.nssFirefoxESR] ?? [])
    let randomizedRatio = openSSLMedian / median(samples[.nssRandomizedALPN] ?? [])
    print("  handshake time ratio (openssl / postern, ≥ 1 means we are faster): firefox-esr \(format(firefoxRatio)), randomized-alpn \(format(randomizedRatio))")
    let openSSLCPU = mean(cpu[.openSSL] ?? [])
    let firefoxCPURatio = openSSLCPU / mean(cpu[.nssFirefoxESR] ?? [])
    let randomizedCPURatio = openSSLCPU / mean(cpu[.nssRandomizedALPN] ?? [])
    print("  CPU per handshake ratio (openssl / postern, ≥ 1 means we use less): firefox-esr \(format(firefoxCPURatio)), randomized-alpn \(format(randomizedCPURatio))")
    print("")
    print("RESULT tls handshake CPU ratio (openssl default / TransportTLS, mean CPU per handshake) firefox-esr \(format(firefoxCPURatio)) randomized-alpn \(format(randomizedCPURatio)); \(format(mean(cpu[.nssFirefoxESR] ?? []), 3)) / \(format(mean(cpu[.nssRandomizedALPN] ?? []), 3)) / \(format(openSSLCPU, 3)) ms")
    print("RESULT tls handshake ratio (openssl default / TransportTLS, median, ≥ 1 means we are faster) firefox-esr \(format(firefoxRatio)) randomized-alpn \(format(randomizedRatio)); medians \(format(median(samples[.nssFirefoxESR] ?? []), 3)) / \(format(median(samples[.nssRandomizedALPN] ?? []), 3)) / \(format(openSSLMedian, 3)) ms")
}

/// User + system CPU seconds of this process so far (every thread).
func processCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}
