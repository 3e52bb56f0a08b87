import Foundation
import Testing
import TransportBase
@testable import SnowflakeTransport

/// SnowflakeTransport as TransportBase sees it: arguments as tor sends them over SOCKS, validated
/// before any network activity, with errors that never repeat a value.
@Suite struct TransportAdapterTests {
    let transport = SnowflakeTransport()

    func arguments(_ text: String) throws -> TransportArguments {
        try TransportArguments(parsing: text)
    }

    @Test func nameIsSnowflake() {
        #expect(transport.name.description == "snowflake")
    }

    @Test func shippedArgumentsBecomeOptions() throws {
        let options = try transport.configuration(from: arguments(
            "fingerprint=2B280B23E1107BB62ABFC40DDCC8824814F80A72;url=https://1098762253.rsc.cdn77.org/;fronts=www.cdn77.com,www.phpmyadmin.net;ice=stun:stun.antisip.com:3478,stun:stun.epygi.com:3478;utls-imitate=hellorandomizedalpn"))
        guard case .http(let endpoint) = options.rendezvous else { Issue.record("expected HTTP rendezvous"); return }
        #expect(endpoint.url.host == "1098762253.rsc.cdn77.org")
        #expect(endpoint.fronts == ["www.cdn77.com", "www.phpmyadmin.net"])
        #expect(options.stunServers.count == 2)
        #expect(options.fingerprint == "2B280B23E1107BB62ABFC40DDCC8824814F80A72")
        #expect(!SnowflakeTransport.usesLoopbackBroker(options), "a public broker keeps local candidates out")
    }

    @Test func testBedArgumentsUseLoopbackCandidates() throws {
        let options = try transport.configuration(from: arguments(
            "fingerprint=D37047891FDE43970DCE2CD6A8C0EF63BCFB4A83;url=http://127.0.5.1:8080/;ice=stun:127.0.5.2:3478"))
        #expect(SnowflakeTransport.usesLoopbackBroker(options))
    }

    @Test func aFrontedLoopbackURLIsNotLoopback() throws {
        let options = try transport.configuration(from: arguments("url=http://127.0.5.1:8080/;front=cdn.example"))
        #expect(!SnowflakeTransport.usesLoopbackBroker(options), "the connection goes to the front")
    }

    @Test func missingURLIsRefusedWithoutEchoingValues() throws {
        let secret = "D37047891FDE43970DCE2CD6A8C0EF63BCFB4A83"
        let error = try #require(throws: TransportError.self) {
            try transport.configuration(from: arguments("fingerprint=\(secret);ice=stun:127.0.5.2:3478"))
        }
        #expect(error.kind == .invalidInput)
        #expect(error.message.contains("url="))
        #expect(!error.description.contains(secret) && !error.description.contains("127.0.5.2"))
    }

    @Test func badFingerprintIsRefusedWithoutEchoingIt() throws {
        let error = try #require(throws: TransportError.self) {
            try transport.configuration(from: arguments("url=http://127.0.5.1:8080/;fingerprint=NOTHEXNOTHEX"))
        }
        #expect(error.kind == .invalidInput)
        #expect(error.message.contains("fingerprint="))
        #expect(!error.description.contains("NOTHEXNOTHEX") && !error.description.contains("127.0.5.1"))
    }

    @Test func duplicateKeysAreRefused() throws {
        let error = try #require(throws: TransportError.self) {
            try transport.configuration(from: arguments("url=http://127.0.5.1:8080/;url=http://127.0.5.9:8080/"))
        }
        #expect(error.code == .invalidArguments)
        #expect(!error.description.contains("127.0.5"))
    }

    @Test func ampCacheIsAcceptedAndUnusableAMPURLsAndSQSAreRefusedBeforeDialling() throws {
        let options = try transport.configuration(from: arguments("url=https://b.example/;ampcache=https://cdn.ampproject.org/;front=www.google.com"))
        guard case .ampCache(_, let cache) = options.rendezvous else {
            Issue.record("ampcache= did not select the AMP cache rendezvous")
            return
        }
        #expect(cache.host == "cdn.ampproject.org")
        // An AMP cache URL cannot name a broker on a non-default port.
        let ported = try #require(throws: TransportError.self) {
            try transport.configuration(from: arguments("url=https://b.example:8443/;ampcache=https://cdn.ampproject.org/"))
        }
        #expect(ported.kind == .invalidInput)
        #expect(!ported.description.contains("b.example"))
        let sqs = try #require(throws: TransportError.self) {
            try transport.configuration(from: arguments("url=https://b.example/;sqsqueue=https://sqs.example/q"))
        }
        #expect(sqs.code == .snowflakeUnsupported)
        #expect(sqs.kind == .invalidInput)
    }

    /// WebRTC needs UDP, which a SOCKS5 upstream proxy cannot carry: the dial fails closed instead
    /// of going around the proxy (nothing is dialled, so no network is needed).
    @Test func anUpstreamProxyIsRefusedRatherThanBypassed() async throws {
        let options = try transport.configuration(from: arguments("url=http://127.0.5.1:8080/"))
        let proxy = try UpstreamProxy(parsing: "socks5://127.0.0.1:1")
        let endpoint = try TransportEndpoint(parsing: "192.0.2.3:80")
        let error = try await #require(throws: TransportError.self) {
            _ = try await transport.dial(endpoint, configuration: options,
                                         context: DialContext(dialer: .through(proxy)))
        }
        #expect(error.code == .unsupportedProxy)
    }
}
