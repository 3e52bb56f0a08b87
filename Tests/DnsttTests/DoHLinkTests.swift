import Foundation
import PosternTestSupport
import Testing
import TransportBase
import TransportWire
@testable import DnsttTransport

/// DoHLink against real DoH servers: the Go stand-in's `-doh` listener (Go's net/http, which picks
/// h2 from Firefox's ALPN, or HTTP/1.1 alone with `-doh-http1`), and in the test bed Debian's
/// unbound (h2 only) at https://resolver.postern.test/dns-query. Rate limiting and oversized
/// answers come from a small Python stand-in (doh_rate_peer.py), since neither real server sends
/// them on cue.
@Suite(.serialized) struct DoHLinkTests {
    @Test func pollOverTheStandInsDoHHTTP2() async throws {
        let standIn = try await DnsttStandIn.start()
        defer { standIn.remove() }
        let link = try await DoHLink.connect(url: standIn.dohURL, dialer: .direct, caFile: standIn.certificates.caFile)
        #expect(link.version == .http2)
        // Five polls at once: five concurrent streams on the one connection.
        for _ in 0..<5 { try await link.send(DnsttPoll.query()) }
        for _ in 0..<5 { try DnsttPoll.expectUsable(try await DnsttPoll.receive(from: link)) }
        #expect(link.connectionCount == 1)
        #expect(link.pauseCount == 0)
        await link.close()
        #expect(try await link.receive() == nil)
        await #expect(throws: DnsttError.self) { try await link.send(DnsttPoll.query()) }
    }

    @Test func pollOverTheStandInsDoHHTTP11() async throws {
        let standIn = try await DnsttStandIn.start(http1Only: true)
        defer { standIn.remove() }
        let link = try await DoHLink.connect(url: standIn.dohURL, dialer: .direct, caFile: standIn.certificates.caFile)
        defer { Task { await link.close() } }
        #expect(link.version == .http11)
        // More polls than connections: keep-alive carries several requests per connection.
        for _ in 0..<6 { try await link.send(DnsttPoll.query()) }
        for _ in 0..<6 { try DnsttPoll.expectUsable(try await DnsttPoll.receive(from: link)) }
        #expect((1...DoHLink.http1Connections).contains(link.connectionCount))
    }

    /// A 429 with `Retry-After: 2` pauses the link: a query sent during the pause never reaches the
    /// server, one sent after it does and is answered.
    @Test func retryAfterPausesSending() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let peer = try PeerProcess(script: "doh_rate_peer.py", arguments: [certificates.certificateFile, certificates.keyFile])
        defer { peer.stop() }
        let port = try await peer.port()
        let link = try await DoHLink.connect(url: "https://127.0.0.1:\(port)/rate", dialer: .direct, caFile: certificates.caFile)
        defer { Task { await link.close() } }
        #expect(link.version == .http11)
        try await link.send([1, 2, 3])
        _ = try await peer.waitForLine(prefix: "REQUEST /rate 1", timeout: 10)
        let paused = ContinuousClock.now + .seconds(5)
        while link.pauseCount == 0, ContinuousClock.now < paused { try await Task.sleep(for: .milliseconds(20)) }
        #expect(link.pauseCount == 1)
        let pausedAt = ContinuousClock.now
        try await link.send([4, 5, 6])  // dropped: the pause runs
        try await Task.sleep(for: .milliseconds(300))
        #expect(!peer.output.contains("REQUEST /rate 2"))
        // After the 2 s pause the next query goes out and its echo comes back.
        try await Task.sleep(until: pausedAt + .milliseconds(2200))
        try await link.send([7, 8, 9])
        let echo = try await DnsttPoll.receive(from: link, within: .seconds(10))
        #expect(echo == [7, 8, 9])
        // The peer prints its line before it answers, but its output reaches us through a pipe
        // reader of its own, which may not have run yet when the echo is here (run20 of make test).
        _ = try await peer.waitForLine(prefix: "REQUEST /rate 2", timeout: 10)
        #expect(peer.output.filter { $0.hasPrefix("REQUEST /rate") } == ["REQUEST /rate 1", "REQUEST /rate 2"])
    }

    /// Bodies over 64000 bytes (Content-Length and chunked) and a wrong content type are dropped
    /// without pausing; the next answer on the same link arrives.
    @Test func oversizedAndMistypedAnswersAreDropped() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let peer = try PeerProcess(script: "doh_rate_peer.py", arguments: [certificates.certificateFile, certificates.keyFile])
        defer { peer.stop() }
        let port = try await peer.port()
        let link = try await DoHLink.connect(url: "https://127.0.0.1:\(port)/caps", dialer: .direct, caFile: certificates.caFile)
        defer { Task { await link.close() } }
        // One at a time, so that the server's n-th answer goes to the n-th query.
        for n in 1...3 {
            try await link.send([UInt8(n)])
            _ = try await peer.waitForLine(prefix: "REQUEST /caps \(n)", timeout: 10)
            let dropped = ContinuousClock.now + .seconds(10)
            while link.droppedCount < n, ContinuousClock.now < dropped { try await Task.sleep(for: .milliseconds(20)) }
            #expect(link.droppedCount == n)
        }
        try await link.send([4])
        #expect(try await DnsttPoll.receive(from: link, within: .seconds(10)) == [4])
        #expect(link.pauseCount == 0)
    }

    @Test func unusableURLsAreRefusedWithoutNamingThem() async throws {
        for url in ["http://resolver.example/dns-query", "https://user@resolver.example/", "https:///dns-query",
                    "https://resolver.example:0/", "https://resolver.example:99999/", "https://[::1/x"] {
            do {
                _ = try await DoHLink.connect(url: url, dialer: .direct)
                Issue.record("\(url) was accepted")
            } catch {
                #expect(error.code == .dohURLUnusable)
                #expect(!error.message.contains("resolver.example"))
            }
        }
        let url = try DoHURL(parsing: "https://Resolver.example:8443/dns-query?x=1#frag")
        #expect(url.host == "Resolver.example" && url.port == 8443 && url.authority == "Resolver.example:8443" && url.target == "/dns-query?x=1")
        #expect(try DoHURL(parsing: "https://[::1]").authority == "[::1]")
        #expect(try DoHURL(parsing: "https://[::1]").target == "/")
    }

    @Test func retryAfterValues() {
        let now = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(RetryAfter.delay(nil, now: now) == .seconds(10))
        #expect(RetryAfter.delay(Array("2".utf8), now: now) == .seconds(2))
        #expect(RetryAfter.delay(Array("3600".utf8), now: now) == .seconds(120))
        #expect(RetryAfter.delay(Array("99999999999999999999".utf8), now: now) == .seconds(120))
        #expect(RetryAfter.delay(Array("soon".utf8), now: now) == .seconds(10))
        #expect(RetryAfter.delay(Array("Sun, 06 Nov 1994 08:50:07 GMT".utf8), now: now) == .seconds(30))
        #expect(RetryAfter.delay(Array("Sunday, 06-Nov-94 08:50:07 GMT".utf8), now: now) == .seconds(30))
        #expect(RetryAfter.delay(Array("Sun Nov  6 08:50:07 1994".utf8), now: now) == .seconds(30))
        #expect(RetryAfter.delay(Array("Sun, 06 Nov 1994 08:00:00 GMT".utf8), now: now) == .zero)
        #expect(RetryAfter.delay(Array("Mon, 07 Nov 1994 08:49:37 GMT".utf8), now: now) == .seconds(120))
        #expect(RetryAfter.httpDate(Array("Sun, 06 Nov 1994 08:49:37 GMT".utf8)) == 784_111_777)
    }

    @Test func http1ReaderFramings() throws {
        // The link's reader is TransportWire's (shared with snowflake's broker since issue #25).
        var reader = DoHLink.http1Reader()
        #expect(try reader.append(Array("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: application/dns-message\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n".utf8)) == nil)
        let response = try #require(try reader.append(Array("2\r\nde\r\n0\r\nX-T: 1\r\n\r\n".utf8)))
        #expect(response.status == 200 && response.body == Array("abcde".utf8) && response.reusable && reader.surplus == 0)
        #expect(response.head.value("content-type") == Array("application/dns-message".utf8))
        var closing = DoHLink.http1Reader()
        #expect(try closing.append(Array("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nxyz".utf8)) == nil)
        #expect(try closing.finish().body == Array("xyz".utf8))
        var truncated = DoHLink.http1Reader()
        #expect(try truncated.append(Array("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nxyz".utf8)) == nil)
        #expect(throws: WireError.self) { try truncated.finish() }
        // The code the link reports for a refused answer.
        func refusal(_ answer: String) -> DnsttError.Code? {
            var reader = DoHLink.http1Reader()
            do {
                _ = try reader.append(Array(answer.utf8))
                return nil
            } catch {
                return DoHLink.error(error).code
            }
        }
        #expect(refusal("HTTP/1.1 200 OK\r\nContent-Length: 64001\r\n\r\n") == .dohResponseTooLarge)
        #expect(refusal("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + String(repeating: "0", count: 1100)) == .dohResponseTooLarge)
        #expect(refusal("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n") == .dohResponseMalformed)
        #expect(refusal("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n") == .dohResponseMalformed)
        // The status of a refused body is known (the link pauses on it).
        var big = DoHLink.http1Reader()
        #expect(throws: WireError.self) { try big.append(Array("HTTP/1.1 429 Slow\r\nContent-Length: 64001\r\n\r\n".utf8)) }
        #expect(big.status == 429)
        var extra = DoHLink.http1Reader()
        #expect(try extra.append(Array("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxHTTP".utf8))?.body == Array("x".utf8))
        #expect(extra.surplus == 4)
        #expect(DoHLink.http1Request([9], url: try DoHURL(parsing: "https://r.example/q")) == Array(
            "POST /q HTTP/1.1\r\nHost: r.example\r\nContent-Length: 1\r\nAccept: application/dns-message\r\nContent-Type: application/dns-message\r\n\r\n".utf8) + [9])
    }

    @Test(.enabled(if: DnsttTestBed.values != nil, "needs the test bed's dnstt stack (POSTERN_TESTBED_ENV)"))
    func pollThroughUnboundDoH() async throws {
        let bed = try #require(DnsttTestBed.values)
        let url = try #require(bed["TB_DNSTT_DOH_URL"])  // https://resolver.postern.test/dns-query
        let domainText = try #require(bed["TB_DNSTT_DOMAIN"])
        let domain = try #require(DnsName(parsing: domainText))
        let link = try await DoHLink.connect(url: url, dialer: .direct, caFile: bed["TB_DNSTT_CA"])
        defer { Task { await link.close() } }
        #expect(link.version == .http2)
        try await link.send(DnsttPoll.query(domain: domain))
        try DnsttPoll.expectUsable(try await DnsttPoll.receive(from: link, within: .seconds(20)), domain: domain)
    }
}
