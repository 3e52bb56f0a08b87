import Foundation
import PosternTestSupport
import Testing
import TransportBase
import TransportTestSupport
@testable import DnsttTransport

/// DoTLink against real DoT servers: the Go stand-in's `-dot` listener (Go's crypto/tls) on
/// 127.0.0.1, and in the test bed Debian's unbound at resolver.postern.test:853, which forwards
/// the tunnel zone to the bed's stand-in.
@Suite(.serialized) struct DoTLinkTests {
    @Test func pollOverTheStandInsDoT() async throws {
        let standIn = try await DnsttStandIn.start()
        defer { standIn.remove() }
        let link = try await DoTLink.connect(host: "127.0.0.1", port: standIn.dotPort, dialer: .direct,
                                             caFile: standIn.certificates.caFile)
        // Three polls pipelined on the one connection, answered in any order.
        for _ in 0..<3 { try await link.send(DnsttPoll.query()) }
        for _ in 0..<3 { try DnsttPoll.expectUsable(try await DnsttPoll.receive(from: link)) }
        #expect(link.connectionCount == 1)
        await link.close()
        #expect(try await link.receive() == nil)
        await #expect(throws: DnsttError.self) { try await link.send(DnsttPoll.query()) }
    }

    /// The server goes away (killed: the kernel closes the connection) and comes back on the same
    /// port: the link dials again by itself and polls are answered on the new connection.
    @Test func redialsAfterTheServerCloses() async throws {
        let standIn = try await DnsttStandIn.start()
        defer { standIn.remove() }
        let link = try await DoTLink.connect(host: "127.0.0.1", port: standIn.dotPort, dialer: .direct,
                                             caFile: standIn.certificates.caFile)
        defer { Task { await link.close() } }
        try await link.send(DnsttPoll.query())
        try DnsttPoll.expectUsable(try await DnsttPoll.receive(from: link))
        standIn.stop()
        try await standIn.launch()
        // A poll sent while the link was between connections may be lost with the old one: send
        // one every 2 s until one is answered (30 s in all: redial delays are 1, 2, 4 ... s).
        let deadline = ContinuousClock.now + .seconds(30)
        var answered = false
        while !answered, ContinuousClock.now < deadline {
            try await link.send(DnsttPoll.query())
            if let response = try? await DnsttPoll.receive(from: link, within: .seconds(2)) {
                try DnsttPoll.expectUsable(response)
                answered = true
            }
        }
        #expect(answered, "no poll answered within 30 s of the server's restart")
        #expect(link.connectionCount >= 2)
    }

    /// The TCP connection goes through the upstream proxy (Debian's microsocks, with credentials):
    /// wrong credentials make the dial fail, which a dial around the proxy would not.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/microsocks"), "needs Debian's microsocks"))
    func dialsThroughTheUpstreamProxy() async throws {
        let standIn = try await DnsttStandIn.start()
        defer { standIn.remove() }
        let microsocks = try await MicrosocksProxy(user: "tor", password: "s3cret")
        defer { microsocks.stop() }
        do {
            _ = try await DoTLink.connect(host: "127.0.0.1", port: standIn.dotPort,
                                          dialer: .through(try UpstreamProxy(parsing: "socks5://tor:wrong@127.0.0.1:\(microsocks.port)")),
                                          caFile: standIn.certificates.caFile)
            Issue.record("the dial with wrong proxy credentials succeeded")
        } catch let error as DnsttError {
            #expect(error.code == .resolverConnectFailed)
        }
        let link = try await DoTLink.connect(host: "127.0.0.1", port: standIn.dotPort,
                                             dialer: .through(try UpstreamProxy(parsing: "socks5://tor:s3cret@127.0.0.1:\(microsocks.port)")),
                                             caFile: standIn.certificates.caFile)
        defer { Task { await link.close() } }
        try await link.send(DnsttPoll.query())
        try DnsttPoll.expectUsable(try await DnsttPoll.receive(from: link))
    }

    /// Frames split at every possible place read back the same; at most one partial frame is held.
    @Test func frameDecoderIsSplitIndependentAndHoldsOneFrame() throws {
        let messages: [[UInt8]] = [[1, 2, 3], [], Array(repeating: 7, count: 300), [9]]
        let stream = try messages.flatMap { try DoTFrameDecoder.frame($0) }
        for size in 1...stream.count {
            var decoder = DoTFrameDecoder()
            var read: [[UInt8]] = []
            var offset = 0
            while offset < stream.count {
                read += decoder.append(Array(stream[offset..<min(offset + size, stream.count)]))
                offset += size
            }
            #expect(read == messages.filter { !$0.isEmpty }, "split into reads of \(size)")
            #expect(decoder.heldCount == 0)
        }
        var decoder = DoTFrameDecoder()
        #expect(decoder.append([0xFF, 0xFF] + Array(repeating: 0, count: 65_534)).isEmpty)
        #expect(decoder.heldCount == DoTFrameDecoder.maximumHeld - 1)
        #expect(decoder.append([0, 0, 5]) == [Array(repeating: 0, count: 65_535)])
        #expect(decoder.heldCount == 2)
        #expect(throws: DnsttError.self) { try DoTFrameDecoder.frame(Array(repeating: 0, count: 65_536)) }
    }

    /// A name the certificate does not hold is refused, and the error does not name the resolver.
    @Test func wrongCertificateNameIsRefusedWithoutNamingTheResolver() async throws {
        let standIn = try await DnsttStandIn.start()
        defer { standIn.remove() }
        do {
            // localhost resolves to 127.0.0.1, but the certificate names postern.test and 127.0.0.1.
            _ = try await DoTLink.connect(host: "localhost", port: standIn.dotPort, dialer: .direct, caFile: standIn.certificates.caFile)
            Issue.record("the handshake with a certificate for another name succeeded")
        } catch {
            #expect(error.code == .resolverTLSFailed)
            #expect(!error.message.contains("localhost"))
            #expect(!error.message.contains("127.0.0.1"))
        }
    }

    @Test(.enabled(if: DnsttTestBed.values != nil, "needs the test bed's dnstt stack (POSTERN_TESTBED_ENV)"))
    func pollThroughUnboundDoT() async throws {
        let bed = try #require(DnsttTestBed.values)
        let dot = try #require(bed["TB_DNSTT_DOT"])  // resolver.postern.test:853
        let colon = try #require(dot.lastIndex(of: ":"))
        let domainText = try #require(bed["TB_DNSTT_DOMAIN"])
        let domain = try #require(DnsName(parsing: domainText))
        let port = try #require(UInt16(dot[dot.index(after: colon)...]))
        let link = try await DoTLink.connect(host: String(dot[..<colon]), port: port,
                                             dialer: .direct, caFile: bed["TB_DNSTT_CA"])
        defer { Task { await link.close() } }
        try await link.send(DnsttPoll.query(domain: domain))
        try DnsttPoll.expectUsable(try await DnsttPoll.receive(from: link, within: .seconds(20)), domain: domain)
    }
}
