import Foundation
import PosternTestSupport
import Testing
import TransportTLS
import TransportTestSupport
@testable import SnowflakeTransport

/// The broker rendezvous over BrowserTLSConnector on loopback: the ClientHello a censor sees on
/// the fronted broker and AMP cache dials (read by a listener of ours), and whole exchanges with
/// openssl s_server and a CA made at test time.
@Suite(.serialized) struct BrokerTLSTests {
    /// OpenSSL 3.0's default hello as the broker dial sent it before it used TransportTLS, without
    /// and with a front (docs/FINGERPRINTS.md), and the cipher part of every OpenSSL default hello:
    /// no connection may send them again.
    static let openSSLDefaultJA4s: Set = ["t13i3110h1_e8f1e7e78f70_1f22a2ca17c4", "t13d3111h1_e8f1e7e78f70_1f22a2ca17c4"]
    static let openSSLDefaultCipherHash = "_e8f1e7e78f70_"

    private func poll() -> ClientPollRequest {
        ClientPollRequest(serializedOffer: GoVectors.shared.pionOfferSerialized, nat: .unknown, fingerprint: String(repeating: "0", count: 40))
    }

    /// The hello of one rendezvous through `front` (a name for the loopback listener).
    private func hello(front: String, amp: Bool = false, connector: BrowserTLSConnector = BrowserTLSConnector()) async throws -> ClientHelloFingerprint {
        let capture = try ClientHelloCapture()
        defer { capture.close() }
        let broker = try #require(URL(string: "https://snowflake-broker.example/"))
        let rendezvous = BrokerRendezvous(endpoint: try BrokerEndpoint(url: broker, fronts: ["\(front):\(capture.port)"]),
                                          connector: connector, ampCache: amp ? URL(string: "https://cdn.ampproject.example/") : nil)
        // The listener closes after the hello: the TLS handshake fails, as a connection failure.
        let error = await #expect(throws: SnowflakeError.self) {
            if amp { _ = try await rendezvous.exchangeAMP(poll()) } else { _ = try await rendezvous.exchange(poll()) }
        }
        #expect(error?.code == .connection, "\(String(describing: error))")
        return try ClientHelloFingerprint(records: try await capture.hello())
    }

    @Test func frontedBrokerDialSendsFirefoxESRsHelloWithItsALPNAndTheFrontAsSNI() async throws {
        let hello = try await hello(front: "localhost")
        print("snowflake broker ClientHello (fronted): JA4 \(hello.ja4), JA3 \(hello.ja3)")
        // The JA4 the firefoxESR profile documents for ALPN h2,http/1.1 (Firefox's own list).
        #expect(hello.ja4 == "t13d1616h2_86a278354501_0c27189014cf")
        #expect(!Self.openSSLDefaultJA4s.contains(hello.ja4) && !hello.ja4.contains(Self.openSSLDefaultCipherHash))
        #expect(hello.applicationProtocols == BrowserTLSConnector.brokerApplicationProtocols)
        #expect(hello.applicationProtocols == ["h2", "http/1.1"])
        #expect(hello.serverName == "localhost", "SNI is the front, never the broker's name")
    }

    @Test func ampCacheDialSendsTheSameHello() async throws {
        let hello = try await hello(front: "localhost", amp: true)
        print("snowflake AMP cache ClientHello (fronted): JA4 \(hello.ja4)")
        #expect(hello.ja4 == "t13d1616h2_86a278354501_0c27189014cf")
        #expect(!Self.openSSLDefaultJA4s.contains(hello.ja4))
        #expect(hello.serverName == "localhost")
    }

    /// utls-nosni (BrowserTLSConnector.sendsServerName false): no SNI at all, the rest unchanged.
    @Test func noSNIDialLeavesTheServerNameOut() async throws {
        let hello = try await hello(front: "localhost", connector: BrowserTLSConnector(sendsServerName: false))
        print("snowflake broker ClientHello (utls-nosni): JA4 \(hello.ja4)")
        #expect(hello.ja4 == "t13i1615h2_86a278354501_0c27189014cf")
        #expect(!Self.openSSLDefaultJA4s.contains(hello.ja4) && !hello.ja4.contains(Self.openSSLDefaultCipherHash))
        #expect(!hello.hasServerName && hello.serverName == nil)
    }

    /// A whole AMP-form exchange through TLS to a front that is an IP literal (checked against the
    /// certificate's IP address): s_server -www answers the GET with its status page, which is
    /// not a poll answer in AMP armor. Reaching that proves the handshake, the verification against the CA file and
    /// the HTTP exchange inside TLS; without the CA the certificate is refused.
    @Test func exchangeThroughTLSVerifiesTheFrontsCertificate() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let server = try OpenSSLServer(certificates: certificates, arguments: ["-www"])
        defer { server.stop() }
        let port = try await server.port()
        let broker = try #require(URL(string: "https://snowflake-broker.example/"))
        let endpoint = try BrokerEndpoint(url: broker, fronts: ["127.0.0.1:\(port)"])

        let trusted = BrokerRendezvous(endpoint: endpoint, connector: BrowserTLSConnector(caFile: certificates.caFile))
        let answered = await #expect(throws: SnowflakeError.self) { _ = try await trusted.exchangeAMP(poll()) }
        // Its page holds a <pre> block, which the armor reader may decode before the poll answer's
        // parser refuses it.
        #expect(answered.map { [.ampArmor, .brokerMessageMalformed].contains($0.code) } == true, "\(String(describing: answered))")

        let untrusted = BrokerRendezvous(endpoint: endpoint, connector: BrowserTLSConnector())
        let refused = await #expect(throws: SnowflakeError.self) { _ = try await untrusted.exchangeAMP(poll()) }
        #expect(refused?.code == .connection, "\(String(describing: refused))")
        #expect(refused?.message.contains("certificate verify failed") == true, "\(String(describing: refused))")
    }

    /// The hello offers h2, so a broker (or front) that picks it must get HTTP/2: a whole poll over
    /// TLS to Debian's nginx with HTTP/2 on, answered with the broker's "no proxies" error, and
    /// nginx's log showing the request came as HTTP/2.
    @Test func aBrokerThatPicksH2GetsThePollOverHTTP2() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let server = try await NginxHTTP2Server(certificates: certificates,
                                                fixedAnswers: ["/client": #"{"error":"no snowflake proxies currently available"}"#])
        defer { server.stop() }
        let broker = try #require(URL(string: "https://snowflake-broker.example/"))
        let rendezvous = BrokerRendezvous(endpoint: try BrokerEndpoint(url: broker, fronts: ["127.0.0.1:\(server.port)"]),
                                          connector: BrowserTLSConnector(caFile: certificates.caFile))
        let response = try await rendezvous.exchange(poll())
        #expect(response == .error("no snowflake proxies currently available"))
        // nginx logs a request when it finalizes it, which can come just after the answer reached us.
        var requests = server.requests()
        let logDeadline = ContinuousClock.now + .seconds(5)
        while requests.isEmpty && ContinuousClock.now < logDeadline {
            try await Task.sleep(for: .milliseconds(20))
            requests = server.requests()
        }
        #expect(requests == ["POST /client HTTP/2.0 Go-http-client/2.0"], "\(requests)")
    }
}
