import Foundation
import Synchronization
import Testing
import TransportTestSupport
import TransportBase
@testable import WebtunnelTransport

/// Whole dials against a peer of ours on loopback (http:// urls, so no TLS: the TLS path runs
/// against nginx in the test bed, WebtunnelEndToEndTests). The reference filter refuses loopback
/// addresses, so these tests hand the transport a resolver that returns the peer's.
struct WebtunnelDialTests {
    /// Accepts one connection, reads the request (up to the blank line), records it and answers.
    private final class Peer: Sendable {
        let listener: LoopbackListener
        let request = Mutex<[UInt8]>([])
        let accepted = Mutex(0)

        init(answer: [UInt8]?, thenEcho: Bool) throws {
            listener = try LoopbackListener()
            let listener = listener
            Task { [self] in
                guard let socket = try? await listener.accept() else { return }
                self.accepted.withLock { $0 += 1 }
                var received: [UInt8] = []
                while !received.containsBlankLine {
                    guard let chunk = try? await socket.read(maximumCount: 4096), !chunk.isEmpty else { break }
                    received += chunk
                }
                self.request.withLock { $0 = received }
                guard let answer else {
                    // Silent: hold the connection until the client gives up.
                    _ = try? await socket.read(maximumCount: 1)
                    return
                }
                try? await socket.write(answer)
                if thenEcho {
                    while let chunk = try? await socket.read(maximumCount: 4096), !chunk.isEmpty {
                        try? await socket.write(chunk)
                    }
                }
                socket.close()
            }
        }

        var endpoint: TransportEndpoint { listener.endpoint }
    }

    private func transport(to peer: Peer, handshake: Duration = .seconds(5)) -> WebtunnelTransport {
        let endpoint = peer.endpoint
        return WebtunnelTransport(handshakeTimeout: handshake, resolver: { _, _, _ throws(TransportError) in [endpoint] })
    }

    private let options = { () -> WebtunnelOptions in
        try! WebtunnelOptions(arguments: TransportArguments(["url": "http://bridge.example/s3cr3t?x=1", "servername": "front.example"]))
    }()

    /// The synthetic address of a webtunnel line; nothing listens there and nothing may dial it.
    private let synthetic = try! TransportEndpoint(parsing: "[2001:db8:5e1c::1]:443")

    @Test func upgradesThenCarriesRawBytesKeepingEarlyOnes() async throws {
        let answer = Array("HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n".utf8) + Array("early".utf8)
        let peer = try Peer(answer: answer, thenEcho: true)
        let connection = try await transport(to: peer).dial(synthetic, configuration: options, context: DialContext())
        defer { connection.close() }
        #expect(peer.request.withLock { $0 } == Array("GET /s3cr3t HTTP/1.1\r\nHost: front.example\r\nUser-Agent: Go-http-client/1.1\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n".utf8))
        #expect(try await connection.read(maximumCount: 100) == Array("early".utf8))
        let payload = (0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try await connection.write(payload)
        var echoed: [UInt8] = []
        while echoed.count < payload.count {
            let chunk = try await connection.read(maximumCount: 65536)
            guard !chunk.isEmpty else { break }
            echoed += chunk
        }
        #expect(echoed == payload, "raw bytes both ways, no framing")
    }

    @Test func refusedUpgradeIsATypedError() async throws {
        let peer = try Peer(answer: Array("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".utf8), thenEcho: false)
        await #expect {
            _ = try await transport(to: peer).dial(synthetic, configuration: options, context: DialContext())
        } throws: { ($0 as? TransportError)?.code == .webtunnelUpgradeRefused }
    }

    @Test func serverClosingBeforeAnsweringIsATypedError() async throws {
        let peer = try Peer(answer: [], thenEcho: false)
        await #expect {
            _ = try await transport(to: peer).dial(synthetic, configuration: options, context: DialContext())
        } throws: { ($0 as? TransportError)?.code == .webtunnelServerClosed }
    }

    @Test func silentServerHitsTheHandshakeDeadline() async throws {
        let peer = try Peer(answer: nil, thenEcho: false)
        let started = ContinuousClock.now
        await #expect {
            _ = try await transport(to: peer, handshake: .seconds(1)).dial(synthetic, configuration: options, context: DialContext())
        } throws: { ($0 as? TransportError)?.code == .webtunnelHandshakeTimeout }
        // The typed timeout is the proof that the deadline fired (the peer never answers nor closes).
        // The bound is loose on purpose: in the shared test process other tests' blocking waits can
        // hold both cooperative threads for seconds (one full run saw this 1 s deadline end at 14.7 s).
        #expect(ContinuousClock.now - started < .seconds(60))
    }

    /// TOR_PT_PROXY: the connection to the url host's address goes through the upstream SOCKS5
    /// proxy (Debian's microsocks, with credentials). Wrong credentials make the dial fail, which a
    /// dial that went around the proxy would not.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/microsocks"), "needs Debian's microsocks"))
    func dialsThroughTheUpstreamProxy() async throws {
        let answer = Array("HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n".utf8)
        let peer = try Peer(answer: answer, thenEcho: true)
        let microsocks = try await MicrosocksProxy(user: "tor", password: "s3cret")
        defer { microsocks.stop() }
        let proxyPort = microsocks.port

        let wrong = DialContext(dialer: .through(try UpstreamProxy(parsing: "socks5://tor:wrong@127.0.0.1:\(proxyPort)")))
        await #expect {
            _ = try await transport(to: peer).dial(synthetic, configuration: options, context: wrong)
        } throws: { ($0 as? TransportError)?.message.contains("upstream proxy") == true }
        #expect(peer.accepted.withLock { $0 } == 0, "nothing reached the server around the proxy")

        let right = DialContext(dialer: .through(try UpstreamProxy(parsing: "socks5://tor:s3cret@127.0.0.1:\(proxyPort)")))
        let connection = try await transport(to: peer).dial(synthetic, configuration: options, context: right)
        defer { connection.close() }
        try await connection.write(Array("through the proxy".utf8))
        #expect(try await connection.read(maximumCount: 100) == Array("through the proxy".utf8))
        #expect(peer.accepted.withLock { $0 } == 1)
    }

    /// The real resolver with a loopback url host: refused before any connection, and the
    /// bridge line's own address (here a listener that counts connections) is never dialled.
    @Test func neitherLoopbackNorTheBridgeAddressIsDialled() async throws {
        let peer = try Peer(answer: [], thenEcho: false)
        let local = try WebtunnelOptions(arguments: TransportArguments(["url": "http://127.0.0.1:\(peer.endpoint.port)/s"]))
        await #expect {
            _ = try await WebtunnelTransport().dial(peer.endpoint, configuration: local, context: DialContext())
        } throws: { ($0 as? TransportError)?.code == .webtunnelNoUsableAddress }
        try await Task.sleep(for: .milliseconds(200))
        #expect(peer.accepted.withLock { $0 } == 0)
        peer.listener.close()
    }

    /// An unresolvable name (.invalid never resolves, RFC 6761) fails with the resolver's error.
    @Test func unresolvableHostIsATypedError() async throws {
        let name = try WebtunnelOptions(arguments: TransportArguments(["url": "https://no-such-host.invalid/s"]))
        await #expect {
            _ = try await WebtunnelTransport(resolveTimeout: .seconds(10)).dial(synthetic, configuration: name, context: DialContext())
        } throws: { ($0 as? TransportError)?.code == .webtunnelResolveFailed }
    }
}

private extension [UInt8] {
    var containsBlankLine: Bool {
        guard count >= 4 else { return false }
        for index in 0...(count - 4) where self[index] == 13 && self[index + 1] == 10 && self[index + 2] == 13 && self[index + 3] == 10 {
            return true
        }
        return false
    }
}
