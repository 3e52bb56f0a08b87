import Foundation
import PosternTestSupport
import Synchronization
import Testing
import TransportBase
import TransportTLS
import TransportTestSupport
@testable import WebtunnelTransport

/// webtunnel's TLS on loopback: the ClientHello it sends (read by a listener of ours), and whole
/// https dials against openssl s_server with a CA made at test time. The reference filter refuses
/// loopback addresses, so the transport gets a resolver that returns the peer's.
@Suite(.serialized) struct WebtunnelTLSTests {
    /// OpenSSL 3.0's default hello as webtunnel sent it before it used TransportTLS, by name and by
    /// IP (docs/FINGERPRINTS.md), and the cipher part of every OpenSSL default hello: no connection
    /// may send them again.
    static let openSSLDefaultJA4s: Set = ["t13d311000_e8f1e7e78f70_1f22a2ca17c4", "t13i310900_e8f1e7e78f70_1f22a2ca17c4"]
    static let openSSLDefaultCipherHash = "_e8f1e7e78f70_"

    private let synthetic = try! TransportEndpoint(parsing: "[2001:db8:5e1c::1]:443")

    private func transport(to endpoint: TransportEndpoint, caFile: String? = nil, handshake: Duration = .seconds(30)) -> WebtunnelTransport {
        WebtunnelTransport(handshakeTimeout: handshake, caFile: caFile, resolver: { _, _, _ throws(TransportError) in [endpoint] })
    }

    private func options(_ url: String, serverName: String? = nil, utls: String? = "hellofirefox_auto") throws -> WebtunnelOptions {
        var arguments = [TransportArguments.Pair(key: "url", value: url)]
        if let serverName { arguments.append(TransportArguments.Pair(key: "servername", value: serverName)) }
        if let utls { arguments.append(TransportArguments.Pair(key: "utls", value: utls)) }
        return try WebtunnelOptions(arguments: TransportArguments(arguments))
    }

    @Test func sendsFirefoxESRsHelloWithHTTP11AloneAndTheServerNameAsSNI() async throws {
        let capture = try ClientHelloCapture()
        defer { capture.close() }
        let dial = try options("https://bridge.example/s3cr3t", serverName: "front.example")
        await #expect {
            _ = try await transport(to: capture.endpoint).dial(synthetic, configuration: dial, context: DialContext())
        } throws: { ($0 as? TransportError)?.code == .webtunnelTLSFailed }
        let hello = try ClientHelloFingerprint(records: try await capture.hello())
        print("webtunnel ClientHello: JA4 \(hello.ja4), JA3 \(hello.ja3)")
        #expect(hello.ja4 == "t13d1616h1_86a278354501_0c27189014cf")
        #expect(!Self.openSSLDefaultJA4s.contains(hello.ja4) && !hello.ja4.contains(Self.openSSLDefaultCipherHash))
        #expect(hello.applicationProtocols == WebtunnelTransport.applicationProtocols)
        #expect(hello.applicationProtocols == ["http/1.1"])
        #expect(hello.serverName == "front.example")
        // Firefox ESR's cipher suites, not OpenSSL's 31.
        #expect(hello.cipherSuites.count == 16 && hello.cipherSuites.first == 0x1301)
    }

    /// Without utls= the hello is lyrebird 0.7's default, a randomized one without ALPN: a new
    /// plausible hello per dial, never OpenSSL's.
    @Test func withoutUTLSEachDialSendsADifferentRandomizedHelloWithoutALPN() async throws {
        var ja3s: Set<String> = []
        for _ in 0..<4 {
            let capture = try ClientHelloCapture()
            defer { capture.close() }
            let dial = try options("https://bridge.example/s3cr3t", serverName: "front.example", utls: nil)
            _ = try? await transport(to: capture.endpoint).dial(synthetic, configuration: dial, context: DialContext())
            let hello = try ClientHelloFingerprint(records: try await capture.hello())
            #expect(hello.applicationProtocols.isEmpty)
            #expect(hello.ja4.hasPrefix("t13d") && hello.ja4.dropFirst(8).hasPrefix("00_"), "\(hello.ja4)")
            #expect(!Self.openSSLDefaultJA4s.contains(hello.ja4) && !hello.ja4.contains(Self.openSSLDefaultCipherHash))
            #expect(hello.serverName == "front.example")
            ja3s.insert(hello.ja3)
        }
        #expect(ja3s.count >= 3, "4 dials, \(ja3s.count) distinct JA3")
    }

    @Test func anIPLiteralURLHostIsNotSentAsSNI() async throws {
        let capture = try ClientHelloCapture()
        defer { capture.close() }
        let dial = try options("https://192.0.2.7/s3cr3t")
        _ = try? await transport(to: capture.endpoint).dial(synthetic, configuration: dial, context: DialContext())
        let hello = try ClientHelloFingerprint(records: try await capture.hello())
        print("webtunnel ClientHello (IP url host): JA4 \(hello.ja4)")
        #expect(hello.ja4 == "t13i1615h1_86a278354501_0c27189014cf")
        #expect(!Self.openSSLDefaultJA4s.contains(hello.ja4))
        #expect(hello.serverName == nil && !hello.hasServerName)
    }

    /// TLS with the certificate verified against the CA file and the url host, then the upgrade
    /// request inside: s_server -www answers any GET with 200, which webtunnel refuses as it must.
    /// Reaching that refusal proves TLS succeeded and the request went through it.
    @Test func verifiesTheCertificateAndSendsTheUpgradeInsideTLS() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let server = try OpenSSLServer(certificates: certificates, arguments: ["-www"])
        defer { server.stop() }
        let endpoint = try TransportEndpoint(parsing: "127.0.0.1:\(try await server.port())")
        let dial = try options("https://\(TestCertificates.serverName)/s3cr3t")
        let stages = StageLog()
        await #expect {
            _ = try await transport(to: endpoint, caFile: certificates.caFile).probe(dial, context: DialContext()) { stages.add($0) }
        } throws: { error in
            guard let error = error as? TransportError, error.code == .webtunnelUpgradeRefused else { return false }
            return error.message.contains("answered 200 instead of 101")
        }
        #expect(stages.all == [.resolve, .tcp, .tls, .upgrade])
    }

    @Test func anUntrustedOrMisnamedCertificateFailsAsWebtunnelTLS() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let server = try OpenSSLServer(certificates: certificates, arguments: ["-www"])
        defer { server.stop() }
        let endpoint = try TransportEndpoint(parsing: "127.0.0.1:\(try await server.port())")

        // Only the system store: the test CA is not in it.
        let untrusted = await #expect(throws: TransportError.self) {
            _ = try await transport(to: endpoint).dial(synthetic, configuration: try options("https://\(TestCertificates.serverName)/s"),
                                                       context: DialContext())
        }
        #expect(untrusted?.code == .webtunnelTLSFailed, "\(String(describing: untrusted))")
        #expect(untrusted?.message.contains("certificate verify failed") == true, "\(String(describing: untrusted))")

        // The right CA, but servername= names another host than the certificate's.
        let misnamed = await #expect(throws: TransportError.self) {
            _ = try await transport(to: endpoint, caFile: certificates.caFile).dial(
                synthetic, configuration: try options("https://\(TestCertificates.serverName)/s", serverName: "other.test"), context: DialContext())
        }
        #expect(misnamed?.code == .webtunnelTLSFailed, "\(String(describing: misnamed))")
    }

    /// A server that accepts and never answers the hello: the dial's handshake deadline ends it
    /// with webtunnel's timeout, not TLS's own code.
    @Test func aSilentTLSServerHitsTheHandshakeDeadline() async throws {
        let capture = try ClientHelloCapture(holdsAfterHello: true)
        defer { capture.close() }
        let started = ContinuousClock.now
        let error = await #expect(throws: TransportError.self) {
            _ = try await transport(to: capture.endpoint, handshake: .seconds(1))
                .dial(synthetic, configuration: try options("https://bridge.example/s"), context: DialContext())
        }
        #expect(error?.code == .webtunnelHandshakeTimeout, "\(String(describing: error))")
        #expect(error?.kind == .timeout)
        // Generous: hundreds of unit tests share two cores (see HostileServerTests).
        #expect(ContinuousClock.now - started < .seconds(30))
    }
}

/// The stages a probe reported, in order.
private final class StageLog: Sendable {
    private let stages = Mutex<[WebtunnelTransport.Stage]>([])
    func add(_ stage: WebtunnelTransport.Stage) { stages.withLock { $0.append(stage) } }
    var all: [WebtunnelTransport.Stage] { stages.withLock { $0 } }
}
