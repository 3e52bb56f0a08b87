import Testing
@testable import TurboTunnel

/// KCP with dnstt's shape: the client's MTU is 134 (a query name under t.example.com), the
/// server's 932 (a 1232-byte response), window 64 on both sides, so the client must take segments
/// longer than its own MSS (`maximumIncomingPayload`).
@Suite struct AsymmetricKCPTests {
    static let conversation: UInt32 = 0x0403_0201

    /// A deterministic loss pattern (a 64-bit LCG), so a failure can be replayed.
    struct Loss {
        var state: UInt64
        let percent: UInt64
        mutating func drops() -> Bool {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return (state >> 33) % 100 < percent
        }
    }

    /// Both directions at once through 20 % loss each way: every byte arrives, in order, and no
    /// packet is longer than its sender's MTU.
    @Test(arguments: [UInt64(1), 2, 3])
    func bothDirectionsArriveInOrderThroughLoss(seed: UInt64) throws {
        var client = KCPControlBlock(conversation: Self.conversation, mtu: 134, window: 64, maximumIncomingPayload: 4096)
        var server = KCPControlBlock(conversation: Self.conversation, mtu: 932, window: 64)
        let upstream = (0..<30_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let downstream = (0..<120_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
        client.send(upstream)
        server.send(downstream)
        var atServer: [UInt8] = []
        var atClient: [UInt8] = []
        var loss = Loss(state: seed, percent: 20)
        var now: UInt32 = 1000
        var largestUp = 0, largestDown = 0
        // 10 ms ticks; 10 simulated minutes at most (it takes a few seconds of simulated time).
        for _ in 0..<60_000 where atServer.count < upstream.count || atClient.count < downstream.count {
            now &+= 10
            for packet in client.flush(now: now) {
                largestUp = max(largestUp, packet.count)
                if !loss.drops() { try server.input(packet, now: now) }
            }
            for packet in server.flush(now: now) {
                largestDown = max(largestDown, packet.count)
                if !loss.drops() { try client.input(packet, now: now) }
            }
            atServer += server.receive()
            atClient += client.receive()
        }
        #expect(atServer == upstream)
        #expect(atClient == downstream)
        #expect(largestUp <= 134 && largestDown <= 932)
        // The server's segments were longer than the client's own MSS: the separate cap was used.
        #expect(largestDown > 134)
        #expect(!client.deadLinkReached && !server.deadLinkReached)
    }

    @Test func segmentsOverTheIncomingCapAreRefused() throws {
        func push(_ count: Int) -> [UInt8] {
            KCPSegment(conversation: Self.conversation, command: .push, window: 64, timestamp: 1, sequenceNumber: 0,
                       unacknowledged: 0, payload: [UInt8](repeating: 1, count: count)).encoded
        }
        // Default: the cap is the MSS (snowflake unchanged).
        var defaults = KCPControlBlock(conversation: Self.conversation, mtu: 134, window: 64)
        #expect(defaults.maximumIncomingPayload == 110)
        try defaults.input(push(110), now: 1)
        let refused = try #require(throws: TurboTunnelError.self) { try defaults.input(push(111), now: 1) }
        #expect(refused.code == .kcpMalformed)
        #expect(KCPControlBlock(conversation: 1).maximumIncomingPayload == KCPSegment.mtu - KCPSegment.headerSize)

        var client = KCPControlBlock(conversation: Self.conversation, mtu: 134, window: 64, maximumIncomingPayload: 4096,
                                     peer: "the dnstt server")
        try client.input(push(908), now: 1)
        #expect(client.receive().count == 908)
        let over = try #require(throws: TurboTunnelError.self) { try client.input(push(4097), now: 2) }
        #expect(over.code == .kcpMalformed)
        #expect(over.message.contains("the dnstt server"))
        // Nothing of the refused packet was taken.
        #expect(client.receive().isEmpty)
    }
}
