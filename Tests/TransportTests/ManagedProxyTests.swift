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

    @Test func anUpstreamProxyIsRefusedAfterVersion() async throws {
        var environment = Self.baseEnvironment
        environment["TOR_PT_PROXY"] = "socks5://127.0.0.1:1080"
        let (status, lines) = try await run(environment)
        #expect(status == 1)
        #expect(lines.count == 2)
        #expect(lines.first == "VERSION 1")
        #expect(lines.last?.hasPrefix("PROXY-ERROR ") == true)
    }

    @Test func servesObfs4UntilStdinClosesAndRelaysThroughObfs4proxy() async throws {
        let echo = try LoopbackPeer(.echo)
        defer { echo.stop() }
        let bridge = try await Obfs4ProxyServer(orPort: echo.port, iatMode: 0)
        defer { bridge.stop() }
        let stateDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-pt-state-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: stateDirectory) }

        var pipeEnds: [Int32] = [0, 0]
        #expect(pipe(&pipeEnds) == 0)
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
