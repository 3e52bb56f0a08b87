import Testing
import TurboTunnel
@testable import DnsttTransport

/// DnsttSessionCore against the in-process server double on a fake clock: the handshake, the
/// stream both ways, what is ignored, and the deadlines.
@Suite struct DnsttSessionCoreTests {
    let domain = DnsName(parsing: "t.example.com")!

    func makeCore(_ server: DnsttServerDouble, handshake: Duration = .seconds(60)) throws -> DnsttSessionCore {
        try DnsttSessionCore(serverPublicKey: server.publicKey, domain: domain, mtu: try DnsttWire.mtu(domain: domain), now: 0,
                             handshakeLimit: handshake)
    }

    /// Runs the fake clock in 10 ms steps, every query answered at once; returns the stream bytes.
    @discardableResult
    func run(_ core: inout DnsttSessionCore, _ server: DnsttServerDouble, from start: UInt32, steps: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        for step in 0..<steps {
            let now = start + UInt32(step * 10)
            try core.tick(now: now)
            for query in core.queries(now: now) {
                #expect(query.count <= 282)  // a full name of 255 octets plus header, question and OPT
                out += try core.receiveResponse(try server.answer(query, now: now), now: now)
            }
            if !out.isEmpty { try core.consume(out.count) }
        }
        return out
    }

    @Test func handshakeSynAndStreamBothWays() throws {
        let server = try DnsttServerDouble(domain: domain)
        var core = try makeCore(server)
        #expect(core.phase == .handshaking)
        try run(&core, server, from: 0, steps: 100)
        #expect(core.phase == .open)
        #expect(server.commands.first == .syn)

        let upstream = (0..<5_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        core.write(upstream)
        try run(&core, server, from: 1_000, steps: 500)
        #expect(server.received == upstream)

        let downstream = (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        try server.write(downstream, now: 6_000)
        let got = try run(&core, server, from: 6_000, steps: 1_000)
        #expect(got == downstream)
        #expect(core.ignoredResponses == 0)
        #expect(core.ignoredPackets == 0)
    }

    @Test func garbageAndForeignResponsesAreIgnored() throws {
        let server = try DnsttServerDouble(domain: domain)
        var core = try makeCore(server)
        #expect(try core.receiveResponse([1, 2, 3], now: 0).isEmpty)
        // A well-formed response under another domain.
        let other = DnsName(parsing: "other.example")!
        let answer = DnsResourceRecord(name: other, type: DnsResourceRecord.typeTXT, class: 1, ttl: 0, data: DnsttWire.encodeTXT([0, 1, 9]))
        #expect(try core.receiveResponse(DnsMessage(id: 1, flags: 0x8400, answers: [answer]).encoded, now: 0).isEmpty)
        // Under the domain, but a KCP packet of another conversation.
        var foreign: [UInt8] = []
        KCPSegment(conversation: 1, command: .push, window: 32, timestamp: 0, sequenceNumber: 0, unacknowledged: 0, payload: [1])
            .encode(into: &foreign)
        let ours = DnsResourceRecord(name: domain, type: DnsResourceRecord.typeTXT, class: 1, ttl: 0,
                                     data: DnsttWire.encodeTXT(DnsttWire.serverPayload([foreign])))
        #expect(try core.receiveResponse(DnsMessage(id: 2, flags: 0x8400, answers: [ours]).encoded, now: 0).isEmpty)
        #expect(core.ignoredResponses == 2)
        #expect(core.ignoredPackets <= 1)  // a 1-in-2^32 chance that conversation 1 is ours
        #expect(core.schedule.tokens == 1)  // a response with a packet owes a poll, whatever KCP thinks
        #expect(core.phase == .handshaking)
    }

    @Test func aSilentServerEndsTheHandshakeAtItsDeadline() throws {
        let server = try DnsttServerDouble(domain: domain)
        var core = try makeCore(server, handshake: .seconds(5))
        var failure: DnsttError?
        var polls = 0
        for now in stride(from: UInt32(0), through: 10_000, by: 10) {
            do {
                try core.tick(now: now)
            } catch {
                failure = error
                #expect(now > 5_000 && now <= 5_010)
                break
            }
            polls += core.queries(now: now).count
        }
        #expect(failure?.code == .handshakeTimeout)
        #expect(polls > 0)
        #expect(failure.map { !$0.message.contains("example") } ?? false)
    }

    @Test func aServerThatFallsSilentEndsTheSessionWithin2Minutes() throws {
        let server = try DnsttServerDouble(domain: domain)
        var core = try makeCore(server)
        try run(&core, server, from: 0, steps: 100)
        #expect(core.phase == .open)
        // From now on nothing comes back; one tick per second is enough for the deadline.
        var failure: DnsttError?
        var now: UInt32 = 1_000
        while now < 200_000 {
            do { try core.tick(now: now) } catch { failure = error; break }
            _ = core.queries(now: now)
            now += 1_000
        }
        // Whichever deadline comes first: the smux NOP sent 10 s after the opening is never
        // acknowledged, so the 60 s send stall (about 70 s) beats the 2-min silence limit.
        #expect(failure?.code == .sendStalled || failure?.code == .downstreamSilent)
        #expect(now > 60_000 && now <= 122_000)
    }
}
