import PosternCrypto
import Foundation
import Testing
import TransportBase
import TransportTestSupport
@testable import Obfs4Transport

/// Against Debian's obfs4proxy as a managed server, on 127.0.0.1 only.
/// POSTERN_OBFS4_INTEROP_BYTES overrides the transfer size (the acceptance run uses 52428800).
@Suite(.serialized) struct Obfs4InteropTests {
    static func transferSize(iatMode: Int) -> Int {
        if let text = ProcessInfo.processInfo.environment["POSTERN_OBFS4_INTEROP_BYTES"], let size = Int(text) { return size }
        // IAT modes sleep up to 10 ms per ≤1448-byte write on both ends, so they get a smaller default.
        return iatMode == 0 ? 4 << 20 : 512 << 10
    }

    @Test(arguments: [0, 1, 2])
    func bytesRoundTripThroughObfs4proxy(iatMode: Int) async throws {
        // POSTERN_OBFS4_INTEROP_MODES=2 runs only the listed modes (for long acceptance-size runs).
        if let modes = ProcessInfo.processInfo.environment["POSTERN_OBFS4_INTEROP_MODES"],
           !modes.split(separator: ",").contains(Substring(String(iatMode))) { return }
        // A fresh server only when obfs4proxy died of its own iat-mode=2 bug (see
        // Obfs4ProxyServer.diedOfParanoidZeroLengthBug); any other failure fails the test.
        for attempt in 1...3 {
            switch try await transferThroughFreshServer(iatMode: iatMode) {
            case .completed: return
            case .serverHitUpstreamBug:
                print("interop iat-mode=\(iatMode): obfs4proxy panicked on a zero-length paranoid write (attempt \(attempt)); new server")
            }
        }
        Issue.record("obfs4proxy died of its zero-length paranoid-write bug three times in a row")
    }

    enum TransferOutcome { case completed, serverHitUpstreamBug }

    func transferThroughFreshServer(iatMode: Int) async throws -> TransferOutcome {
        let echo = try LoopbackPeer(.echo)
        defer { echo.stop() }
        let server = try await Obfs4ProxyServer(orPort: echo.port, iatMode: iatMode)
        defer { server.stop() }

        let configuration = try Obfs4BridgeConfiguration(arguments: server.arguments)
        #expect(configuration.iatMode.rawValue == iatMode)
        // The cert we re-encode is the one obfs4proxy printed.
        #expect(configuration.certArgument == server.arguments["cert"])

        let transport = Obfs4Transport(handshakeTimeout: .seconds(20))
        let connection = try await transport.dial(server.endpoint, configuration: configuration, context: DialContext())
        defer { connection.close() }

        let size = Self.transferSize(iatMode: iatMode)
        let payload = SecureRandom.bytes(size)
        let started = ContinuousClock.now
        async let sending: Void = {
            var offset = 0
            while offset < payload.count {
                let end = min(offset + 65536, payload.count)
                try await connection.write(Array(payload[offset..<end]))
                offset = end
            }
        }()
        var received: [UInt8] = []
        received.reserveCapacity(size)
        do {
            while received.count < size {
                let chunk = try await connection.read(maximumCount: 65536)
                if chunk.isEmpty { break }
                received += chunk
            }
            try await sending
        } catch {
            // Give a crashing server a moment to be reaped before asking how it died.
            for _ in 0..<20 where server.process.isRunning { try await Task.sleep(for: .milliseconds(50)) }
            if server.diedOfParanoidZeroLengthBug { return .serverHitUpstreamBug }
            Issue.record("after \(received.count) of \(size) bytes: \(error)\nobfs4proxy's log:\n\(server.log)")
            throw error
        }
        let elapsed = ContinuousClock.now - started
        #expect(received.count == size)
        #expect(received == payload)
        print("interop iat-mode=\(iatMode): \(size) bytes each way in \(elapsed)")
        return .completed
    }
}

@Suite struct ConcurrentStreamTests {
    /// 200 simultaneous bridge connections through one in-process listener, as tor may open them.
    @Test func twoHundredConcurrentStreamsThroughTheSocksListener() async throws {
        let echo = try LoopbackPeer(.echo)
        defer { echo.stop() }
        let bridge = try await Obfs4ProxyServer(orPort: echo.port, iatMode: 0)
        defer { bridge.stop() }
        let listener = try PTSocksServer(transport: Obfs4Transport(handshakeTimeout: .seconds(30)))
        defer { listener.stop() }
        let arguments = bridge.arguments.description
        let streams = 200
        let perStream = 32 * 1024

        let matched = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<streams {
                group.addTask {
                    var client = try await RawSocksClient.connect(to: listener.endpoint)
                    defer { client.socket.close() }
                    let (auth, reply) = try await client.open(arguments: arguments, target: bridge.endpoint)
                    guard auth == [1, 0], reply == 0 else { return false }
                    let payload = (0..<perStream).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
                    try await client.socket.write(payload)
                    return try await client.read(perStream) == payload
                }
            }
            var count = 0
            for try await ok in group where ok { count += 1 }
            return count
        }
        #expect(matched == streams)
    }
}
