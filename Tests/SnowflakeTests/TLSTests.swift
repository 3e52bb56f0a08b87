import Foundation
import Testing
@testable import SnowflakeTransport

/// HTTPS to the test bed broker's TLS listener (Go's crypto/tls, a fresh self-signed certificate
/// for snowflake-broker.test and 127.0.5.1): our NSS client (BrowserTLSConnector, Firefox ESR's hello)
/// with that certificate as CA.
@Suite struct TLSTestBedTests {
    func request(_ bed: SnowflakeTestBed) -> ClientPollRequest {
        // An unknown bridge is refused at once: no proxy is used.
        ClientPollRequest(serializedOffer: GoVectors.shared.pionOfferSerialized, nat: .unknown,
                          fingerprint: String(repeating: "0", count: 40))
    }

    @Test func pollOverHTTPS() async throws {
        let bed = try SnowflakeTestBed.require()
        let url = try #require(URL(string: bed["TB_SNOWFLAKE_BROKER_TLS_URL"]))
        let rendezvous = BrokerRendezvous(endpoint: try BrokerEndpoint(url: url),
                                          connector: BrowserTLSConnector(caFile: bed["TB_SNOWFLAKE_BROKER_CA"]))
        #expect(try await rendezvous.exchange(request(bed)) == .error("unknown bridge fingerprint"))
        // The AMP form too (a chunked, armored answer through TLS).
        #expect(try await rendezvous.exchangeAMP(request(bed)) == .error("unknown bridge fingerprint"))
    }

    @Test func frontedPollChecksTheFrontsCertificate() async throws {
        let bed = try SnowflakeTestBed.require()
        let broker = try #require(URL(string: bed["TB_SNOWFLAKE_BROKER_TLS_URL"]))
        // The URL's host cannot resolve; the front (the broker's IP, in its certificate) is dialled
        // and verified; Host names the URL's host.
        let fronted = try #require(URL(string: "https://snowflake-broker.invalid/"))
        let rendezvous = BrokerRendezvous(endpoint: try BrokerEndpoint(url: fronted, fronts: ["\(broker.host!):\(broker.port!)"]),
                                          connector: BrowserTLSConnector(caFile: bed["TB_SNOWFLAKE_BROKER_CA"]))
        #expect(try await rendezvous.exchange(request(bed)) == .error("unknown bridge fingerprint"))
    }

    @Test func untrustedCertificateIsRefused() async throws {
        let bed = try SnowflakeTestBed.require()
        let url = try #require(URL(string: bed["TB_SNOWFLAKE_BROKER_TLS_URL"]))
        let rendezvous = BrokerRendezvous(endpoint: try BrokerEndpoint(url: url), connector: BrowserTLSConnector())
        let error = await #expect(throws: SnowflakeError.self) { try await rendezvous.exchange(request(bed)) }
        #expect(error?.message.contains("certificate verify failed") == true, "\(String(describing: error))")
    }
}
