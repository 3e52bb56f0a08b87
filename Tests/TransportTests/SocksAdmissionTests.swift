import Foundation
import Synchronization
import Testing
import TransportBase
import TransportTestSupport

/// Plain TCP, counting dials (a refused CONNECT must never reach one).
final class CountingPlainTransport: PluggableTransport, @unchecked Sendable {
    let name = TransportName("plain")!
    private let count = Mutex(0)
    var dials: Int { count.withLock { $0 } }

    func configuration(from arguments: TransportArguments) throws(TransportError) -> TransportArguments { arguments }

    func dial(_ endpoint: TransportEndpoint, configuration: TransportArguments, context: DialContext) async throws -> any TransportConnection {
        count.withLock { $0 += 1 }
        return try await context.dialer.connect(to: endpoint, timeout: .seconds(5))
    }
}

private func endpoint(_ peer: LoopbackPeer) throws -> TransportEndpoint { try TransportEndpoint(parsing: "127.0.0.1:\(peer.port)") }

/// Local attackers (issue 12, item 6): an in-process PT listener serves only this run's bridges,
/// and every listener caps its concurrent sessions.
@Suite struct SocksAdmissionTests {
    @Test func aRestrictedListenerServesItsBridgesAndRefusesAnythingElse() async throws {
        let echo = try LoopbackPeer(.echo)
        let other = try LoopbackPeer(.echo)
        defer { echo.stop(); other.stop() }
        let transport = CountingPlainTransport()
        let bridge = SocksAdmission.Bridge(endpoint: try endpoint(echo), arguments: TransportArguments(["cert": "c1", "iat-mode": "0"]))
        let server = try PTSocksServer(transport: transport, admission: .restricted(to: [bridge]))
        defer { server.stop() }

        // The configured bridge, arguments in the other order: served.
        var allowed = try await RawSocksClient.connect(to: server.endpoint)
        #expect(try await allowed.open(arguments: "iat-mode=0;cert=c1", target: try endpoint(echo)).reply == 0)
        try await allowed.socket.write(Array("hello".utf8))
        #expect(try await allowed.read(5) == Array("hello".utf8))

        // Same address, other arguments; and other address, same arguments: refused with 02, and
        // the transport never dials.
        let dialsBefore = transport.dials
        var wrongArguments = try await RawSocksClient.connect(to: server.endpoint)
        #expect(try await wrongArguments.open(arguments: "cert=c2;iat-mode=0", target: try endpoint(echo)).reply == 2)
        var wrongTarget = try await RawSocksClient.connect(to: server.endpoint)
        #expect(try await wrongTarget.open(arguments: "cert=c1;iat-mode=0", target: try endpoint(other)).reply == 2)
        #expect(transport.dials == dialsBefore, "a refused destination was dialled")

        // A new plan replaces the bridges: the old one is refused from then on.
        server.admission.allow([SocksAdmission.Bridge(endpoint: try endpoint(other), arguments: TransportArguments(["cert": "c1", "iat-mode": "0"]))])
        var old = try await RawSocksClient.connect(to: server.endpoint)
        #expect(try await old.open(arguments: "cert=c1;iat-mode=0", target: try endpoint(echo)).reply == 2)
        var moved = try await RawSocksClient.connect(to: server.endpoint)
        #expect(try await moved.open(arguments: "cert=c1;iat-mode=0", target: try endpoint(other)).reply == 0)
    }

    @Test func anOpenListenerStillServesAnyDestination() async throws {
        let echo = try LoopbackPeer(.echo)
        defer { echo.stop() }
        let server = try PTSocksServer(transport: CountingPlainTransport(), admission: .open())
        defer { server.stop() }
        var client = try await RawSocksClient.connect(to: server.endpoint)
        #expect(try await client.open(arguments: "anything=1", target: try endpoint(echo)).reply == 0)
    }

    @Test func sessionsBeyondTheCapAreClosedAtOnceAndSlotsComeBack() async throws {
        let server = try PTSocksServer(transport: CountingPlainTransport(), negotiationTimeout: .seconds(20),
                                       admission: .open(maximumSessions: 4))
        defer { server.stop() }
        // Four clients that never finish their greeting hold the four slots.
        var holders: [RawSocksClient] = []
        for _ in 0..<4 {
            let client = try await RawSocksClient.connect(to: server.endpoint)
            try await client.socket.write([5])
            holders.append(client)
        }
        for _ in 0..<100 where server.admission.openSessions < 4 { try await Task.sleep(for: .milliseconds(20)) }
        #expect(server.admission.openSessions == 4)
        var fifth = try await RawSocksClient.connect(to: server.endpoint)
        try await fifth.socket.write([5, 1, 0])
        #expect(try await fifth.read(2).isEmpty, "the fifth session was served")
        // One holder leaves: its slot is free again.
        holders[0].socket.close()
        for _ in 0..<100 where server.admission.openSessions > 3 { try await Task.sleep(for: .milliseconds(20)) }
        var sixth = try await RawSocksClient.connect(to: server.endpoint)
        try await sixth.socket.write([5, 1, 0])
        #expect(try await sixth.read(2) == [5, 0])
        for holder in holders { holder.socket.close() }
    }
}
