import Foundation
import PosternLinkSpec
@testable import PosternTrials
import Testing
import TransportBase

/// `bridges test --deep`'s pieces without a tor: the freeze rule on flow counts, and the counting
/// relay against a real loopback server that sends 20 KB and then goes silent with the
/// connection open (what the test bed's freeze censor leaves a client with).
struct DeepCheckTests {
    private static func flow(received: Int, lastRead: Duration?, age: Duration, open: Bool = true) -> FlowReport {
        let counts = FlowCounts(started: .now, bytesSent: 500, bytesReceived: received, connectedAfter: .milliseconds(1),
                                firstWriteAfter: .milliseconds(2), lastWriteAfter: .milliseconds(3), lastReadAfter: lastRead, age: age)
        return FlowReport(peer: try! TransportEndpoint(parsing: "127.0.0.1:9"), origin: .healthCheck, throughProxy: false,
                          counts: counts, error: nil, isOpen: open, endedByPeer: false)
    }

    @Test func aFreezeNeedsBytesThenSilenceOnEveryOpenConnection() {
        let frozen = Self.flow(received: 14_000, lastRead: .seconds(1), age: .seconds(8))
        #expect(DeepCheck.freeze(in: [frozen])?.counts.bytesReceived == 14_000)
        // Still receiving: no freeze.
        #expect(DeepCheck.freeze(in: [Self.flow(received: 14_000, lastRead: .seconds(7), age: .seconds(8))]) == nil)
        // Another connection of the bridge still carries data: no freeze.
        #expect(DeepCheck.freeze(in: [frozen, Self.flow(received: 900, lastRead: .seconds(7.5), age: .seconds(8))]) == nil)
        // Nothing ever came: silence, not a freeze.
        #expect(DeepCheck.freeze(in: [Self.flow(received: 0, lastRead: nil, age: .seconds(20))]) == nil)
        // Closed connections are not frozen ones.
        #expect(DeepCheck.freeze(in: [Self.flow(received: 14_000, lastRead: .seconds(1), age: .seconds(8), open: false)]) == nil)
        // The figure is the connection that carried most.
        let small = Self.flow(received: 3_000, lastRead: .seconds(1), age: .seconds(9))
        #expect(DeepCheck.freeze(in: [small, frozen])?.counts.bytesReceived == 14_000)
    }

    @Test func sizesInWords() {
        #expect(DeepCheck.size(16 * 1024) == "16 KB")
        #expect(DeepCheck.size(14_480) == "14 KB")
        #expect(DeepCheck.size(1_048_576) == "1.0 MB")
    }

    @Test func theRelayCountsWhatTheServerSendsAndSeesItStop() async throws {
        let server = try LoopbackListener(port: 0)
        defer { server.close() }
        let serving = Task {
            let peer = try await server.accept()
            _ = try await peer.read(maximumCount: 100)
            try await peer.write([UInt8](repeating: 7, count: 20_000))
            // Silent from here, the connection kept open until the test ends.
            try await Task.sleep(for: .seconds(30))
            peer.close()
        }
        defer { serving.cancel() }
        let relay = try BridgeRelay(to: server.endpoint)
        defer { relay.close() }
        let client = try await TCPSocket.connect(to: TransportEndpoint(parsing: "127.0.0.1:\(relay.port)"), timeout: .seconds(5))
        defer { client.close() }
        try await client.write(Array("hello".utf8))
        var got = 0
        while got < 20_000 { got += try await client.read(maximumCount: 65536).count }
        #expect(got == 20_000)
        try await Task.sleep(for: .milliseconds(600))
        let flows = relay.flows
        #expect(flows.count == 1)
        #expect(flows.first?.counts.bytesReceived == 20_000)
        #expect(flows.first?.counts.bytesSent == 5)
        #expect(DeepCheck.freeze(in: flows, stall: .milliseconds(500))?.counts.bytesReceived == 20_000)
        #expect(DeepCheck.freeze(in: flows, stall: .seconds(20)) == nil)
    }

    @Test func relaysOnlyLinesWhoseAddressIsThePeer() throws {
        let rules = BridgeArgumentRulebook.syntaxOnly
        let vanilla = try BridgeLine(validating: "127.0.0.1:9001 " + String(repeating: "A", count: 40), rules: rules)
        #expect(DeepCheck.relays(vanilla))
        let snowflake = try BridgeLine(validating: "snowflake 192.0.2.3:80 " + String(repeating: "B", count: 40)
                                       + " url=https://broker.example/", rules: rules)
        #expect(!DeepCheck.relays(snowflake))
    }
}
