#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Testing
import TransportBase
import TransportTestSupport
@testable import Obfs4Transport

/// Collects managed-proxy lines and lets a test wait for one.
final class LineCollector: Sendable {
    private let storage = Mutex<[String]>([])
    let stream: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation

    init() { (stream, continuation) = AsyncStream<String>.makeStream() }

    var output: ManagedProxyOutput {
        ManagedProxyOutput { [self] line in
            storage.withLock { $0.append(line) }
            continuation.yield(line)
        }
    }

    var lines: [String] { storage.withLock { $0 } }

    func waitFor(_ predicate: (String) -> Bool) async -> String? {
        for await line in stream where predicate(line) { return line }
        return nil
    }
}

@Suite struct ManagedProxyTests {
    static let baseEnvironment = [
        "TOR_PT_MANAGED_TRANSPORT_VER": "1",
        "TOR_PT_CLIENT_TRANSPORTS": "obfs4",
        "TOR_PT_EXIT_ON_STDIN_CLOSE": "1",
    ]

    /// A pipe whose ends are not inherited by processes other tests spawn meanwhile (an inherited
    /// write end would keep the proxy from ever seeing end of file).
    static func closeOnExecPipe() throws -> [Int32] {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw HarnessError("pipe failed") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return ends
    }

    func run(_ environment: [String: String]) async throws -> (Int32, [String]) {
        let collector = LineCollector()
        let status = await ManagedClientProxy.run(registry: try TransportRegistry([Obfs4Transport()]), environment: environment,
                                                  output: collector.output, standardInput: -1)
        return (status, collector.lines)
    }

    @Test func environmentErrorsComeBeforeVersion() async throws {
        var environment = Self.baseEnvironment
        environment["TOR_PT_MANAGED_TRANSPORT_VER"] = nil
        #expect(try await run(environment) == (1, ["ENV-ERROR no TOR_PT_MANAGED_TRANSPORT_VER environment variable"]))
        environment["TOR_PT_MANAGED_TRANSPORT_VER"] = "2,3b"
        #expect(try await run(environment) == (1, ["VERSION-ERROR no-version"]))
        environment["TOR_PT_MANAGED_TRANSPORT_VER"] = "1"
        environment["TOR_PT_CLIENT_TRANSPORTS"] = ""
        #expect(try await run(environment) == (1, ["ENV-ERROR no TOR_PT_CLIENT_TRANSPORTS environment variable"]))
    }

    @Test(arguments: ["http://127.0.0.1:8080", "socks4a://127.0.0.1:1080", "socks5://proxy.example:1080", "socks5://u@127.0.0.1:1080"])
    func anUnusableUpstreamProxyIsRefusedAfterVersion(proxy: String) async throws {
        var environment = Self.baseEnvironment
        environment["TOR_PT_PROXY"] = proxy
        let (status, lines) = try await run(environment)
        #expect(status == 1)
        #expect(lines.count == 2)
        #expect(lines.first == "VERSION 1")
        #expect(lines.last?.hasPrefix("PROXY-ERROR ") == true)
    }

    @Test func upstreamProxyURIsParseAndRoundTrip() throws {
        for text in ["socks5://127.0.0.1:1080", "socks5://user:p@ss:w@rd@127.0.0.1:1080", "socks5://[::1]:9050"] {
            #expect(try UpstreamProxy(parsing: text).description == text)
        }
        let proxy = try UpstreamProxy(parsing: "socks5://user:p@ss:w@rd@127.0.0.1:1080")
        #expect(proxy.username == "user")
        #expect(proxy.password == "p@ss:w@rd")
        #expect(!proxy.scrubbedDescription.contains("user"))
    }

    /// TOR_PT_PROXY through Debian's microsocks (a real SOCKS5 server, with RFC 1929 credentials).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/microsocks"), "needs Debian's microsocks"))
    func obfs4GoesThroughTheUpstreamSocks5Proxy() async throws {
        let echo = try LoopbackPeer(.echo)
        defer { echo.stop() }
        let bridge = try await Obfs4ProxyServer(orPort: echo.port, iatMode: 0)
        defer { bridge.stop() }
        let microsocks = try await MicrosocksProxy(user: "tor", password: "s3cret")
        defer { microsocks.stop() }
        let proxyPort = microsocks.port

        let pipeEnds = try Self.closeOnExecPipe()
        var environment = Self.baseEnvironment
        environment["TOR_PT_PROXY"] = "socks5://tor:s3cret@127.0.0.1:\(proxyPort)"
        let collector = LineCollector()
        let registry = try TransportRegistry([Obfs4Transport(handshakeTimeout: .seconds(20))])
        let (readEnd, writeEnd) = (pipeEnds[0], pipeEnds[1])
        let finalEnvironment = environment
        let proxyTask = Task { await ManagedClientProxy.run(registry: registry, environment: finalEnvironment, output: collector.output, standardInput: readEnd) }
        _ = await collector.waitFor { $0 == "CMETHODS DONE" }
        let lines = collector.lines
        #expect(Array(lines.prefix(2)) == ["VERSION 1", "PROXY DONE"])
        let cmethod = try #require(lines.first { $0.hasPrefix("CMETHOD obfs4 socks5 ") })
        let listener = try TransportEndpoint(parsing: String(cmethod.split(separator: " ")[3]))

        var client = try await RawSocksClient.connect(to: listener)
        let (auth, reply) = try await client.open(arguments: bridge.arguments.description, target: bridge.endpoint)
        #expect(auth == [1, 0])
        #expect(reply == 0)
        let payload = Array(repeating: Array("via the upstream proxy ".utf8), count: 3000).flatMap { $0 }
        try await client.socket.write(payload)
        #expect(try await client.read(payload.count) == payload)
        client.socket.close()

        // Wrong credentials: the proxy refuses, so the dial fails and tor gets a failure reply.
        let badDialer = OutboundDialer.through(try UpstreamProxy(parsing: "socks5://tor:wrong@127.0.0.1:\(proxyPort)"))
        await #expect { _ = try await badDialer.connect(to: bridge.endpoint, timeout: .seconds(5)) } throws: {
            ($0 as? TransportError)?.code == .proxyRefused
        }
        close(writeEnd)
        #expect(await proxyTask.value == 0)
    }

    @Test func servesObfs4UntilStdinClosesAndRelaysThroughObfs4proxy() async throws {
        let echo = try LoopbackPeer(.echo)
        defer { echo.stop() }
        let bridge = try await Obfs4ProxyServer(orPort: echo.port, iatMode: 0)
        defer { bridge.stop() }
        let stateDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-pt-state-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: stateDirectory) }

        let pipeEnds = try Self.closeOnExecPipe()
        let (readEnd, writeEnd) = (pipeEnds[0], pipeEnds[1])
        var environment = Self.baseEnvironment
        environment["TOR_PT_CLIENT_TRANSPORTS"] = "snowflake,obfs4,not-a-name"
        environment["TOR_PT_STATE_LOCATION"] = stateDirectory.path + "/"
        let collector = LineCollector()
        let registry = try TransportRegistry([Obfs4Transport(handshakeTimeout: .seconds(20))])
        let proxy = Task { await ManagedClientProxy.run(registry: registry, environment: environment, output: collector.output, standardInput: readEnd) }

        _ = await collector.waitFor { $0 == "CMETHODS DONE" }
        let lines = collector.lines
        #expect(lines.first == "VERSION 1")
        #expect(lines.contains(#"STATUS TYPE=version IMPLEMENTATION="postern" VERSION="0.1""#))
        let cmethods = lines.filter { $0.hasPrefix("CMETHOD") }
        #expect(cmethods.count == 2, "one CMETHOD for obfs4, then CMETHODS DONE; unknown names ignored")
        let cmethod = try #require(cmethods.first)
        #expect(cmethod.hasPrefix("CMETHOD obfs4 socks5 127.0.0.1:"))
        #expect(FileManager.default.fileExists(atPath: stateDirectory.path))

        // Use the listener exactly as tor would.
        let listenerEndpoint = try TransportEndpoint(parsing: String(cmethod.split(separator: " ")[3]))
        var client = try await RawSocksClient.connect(to: listenerEndpoint)
        let (auth, reply) = try await client.open(arguments: bridge.arguments.description, target: bridge.endpoint)
        #expect(auth == [1, 0])
        #expect(reply == 0)
        let payload = Array(repeating: Array("tor cells go here ".utf8), count: 4000).flatMap { $0 }
        try await client.socket.write(payload)
        #expect(try await client.read(payload.count) == payload)
        client.socket.close()

        // tor closing our stdin is the shutdown signal.
        close(writeEnd)
        #expect(await proxy.value == 0)
    }
}
