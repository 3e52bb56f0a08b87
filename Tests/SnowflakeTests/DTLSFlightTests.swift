import Foundation
import PosternCrypto
import PosternTestSupport
import Testing
@testable import SnowflakeTransport

/// Firefox ESR 153's DTLS server flight to Debian's snowflake-proxy (pion), measured with tshark
/// as the snowflake client's WebRTC peer: docs/FINGERPRINTS.md, "DTLS server flight"
/// (firefox-snowflake). Fields NSS 3.87 cannot reach are listed there; none is left out here.
enum FirefoxWebRTCServerFlight {
    static let serverHelloVersion: UInt16 = 0xfefd
    static let cipherSuite: UInt16 = 0xc02b
    /// renegotiation_info, ec_point_formats, extended_master_secret, use_srtp
    static let extensions: [UInt16] = [0xff01, 0x000b, 0x0017, 0x000e]
    static let srtpProfile: UInt16 = 0x0007
    static let sessionIDLength = 32
    static let pointFormats: [UInt8] = [0]
    static let keyExchange: (group: UInt16, scheme: UInt16) = (0x001d, 0x0403)
    static let certificateTypes: [UInt8] = [1, 64, 2]
    static let certificateRequestSchemes: [UInt16] = [0x0403, 0x0503, 0x0603, 0x0203, 0x0804, 0x0805, 0x0806,
                                                      0x0401, 0x0501, 0x0601, 0x0201, 0x0402, 0x0502, 0x0602, 0x0202]
    static let ja4s = "dd20400_c02b_4e456594283b"
    /// ja3s as text (SSLVersion,Cipher,Extensions), whose MD5 is 7d4e3b5d670ff9599167df8c1ccd26c3.
    static let ja3sText = "65277,49195,65281-11-23-14"
    static let certificateSerialBytes = 4
    static let certificateDERBytes = 329
}

extension DTLSServerFlight {
    /// JA4S (FoxIO's JA4 specification): d (DTLS), d2 (DTLS 1.2), extension count, no ALPN,
    /// cipher, then the first 12 hex of SHA-256 over the extensions in order.
    var ja4s: String {
        func hex(_ value: UInt16) -> String { String(value, radix: 16).leftPadded(4) }
        let version = serverHelloVersion == 0xfefd ? "d2" : serverHelloVersion == 0xfeff ? "d1" : "00"
        let digest = Digest.sha256(Array(extensions.map(hex).joined(separator: ",").utf8))
        let head = digest.prefix(6).map { String($0, radix: 16).leftPadded(2) }.joined()
        return "d\(version)\(String(extensions.count).leftPadded(2))00_\(hex(cipherSuite))_\(head)"
    }

    var ja3sText: String {
        "\(serverHelloVersion),\(cipherSuite),\(extensions.map(String.init).joined(separator: "-"))"
    }
}

private extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}

/// Our DTLS server flight as pion receives it: ICE to Debian's snowflake-proxy, every datagram
/// DTLSServer hands to ICE before the handshake completes kept (they go on the wire unchanged),
/// then read with DTLSServerFlight and compared field by field with Firefox's.
@Suite(.serialized) struct DTLSFlightTestBedTests {
    @Test(.timeLimit(.minutes(2))) func serverFlightToARealProxyMatchesFirefoxs() async throws {
        let bed = try SnowflakeTestBed.require()
        let agent = try ICEAgent(stunServer: bed.stunServer, localAddresses: ["127.0.0.1"])
        defer { agent.close() }
        let dtls = try DTLSServer()
        let local = try await agent.gather()
        let offer = DataChannelOffer(iceUsernameFragment: local.usernameFragment, icePassword: local.password,
                                     certificateDigest: dtls.certificateDigest, candidates: local.candidates)
        let response = try await bed.brokerRendezvous.exchangeWaitingForAProxy(
            ClientPollRequest(offer: offer.sessionDescription, nat: .unknown, fingerprint: bed.fingerprint))
        let answer = try DataChannelAnswer(sdp: try response.requireAnswer().sdp)
        try dtls.expectPeerCertificate(sha256: answer.certificateDigest)
        try await agent.connect(usernameFragment: answer.iceUsernameFragment, password: answer.icePassword,
                                candidates: answer.candidates)
        var firstFlight: [[UInt8]] = []
        var clientHellos = 0
        for await datagram in agent.datagrams {
            if datagram.count > 25, datagram[0] == 22, datagram[13] == 1 { clientHellos += 1 }
            let (send, data) = try dtls.receive(datagram)
            if firstFlight.isEmpty { firstFlight = send }
            for out in send { try agent.send(out) }
            if dtls.handshakeComplete || !data.isEmpty { break }
        }
        #expect(dtls.handshakeComplete)
        #expect(dtls.negotiation?.srtpProfile == FirefoxWebRTCServerFlight.srtpProfile)

        let flight = try DTLSServerFlight(datagrams: firstFlight)
        let certificate = try #require(flight.certificate)
        let firefox = FirefoxWebRTCServerFlight.self
        var rows: [(String, String, String, Bool)] = []
        func compare(_ field: String, _ ours: String, _ theirs: String, equal: Bool? = nil) {
            rows.append((field, ours, theirs, equal ?? (ours == theirs)))
        }
        func hex(_ values: [UInt16]) -> String { values.map { String($0, radix: 16).leftPadded(4) }.joined(separator: ",") }
        compare("HelloVerifyRequest", flight.helloVerifyRequest ? "yes" : "no", "no")
        compare("ClientHellos sent by pion", String(clientHellos), "1")
        compare("ServerHello version", String(flight.serverHelloVersion, radix: 16), String(firefox.serverHelloVersion, radix: 16))
        compare("cipher", String(flight.cipherSuite, radix: 16), String(firefox.cipherSuite, radix: 16))
        compare("extensions (order)", hex(flight.extensions), hex(firefox.extensions))
        compare("use_srtp chosen", flight.srtpProfile.map { hex([$0]) } ?? "-", hex([firefox.srtpProfile]))
        compare("session_id length", String(flight.sessionIDLength), String(firefox.sessionIDLength))
        compare("ec_point_formats", flight.pointFormats.map { $0.map(String.init).joined(separator: ",") } ?? "-", "0")
        compare("ServerKeyExchange group / sig", hex([flight.keyExchangeGroup ?? 0, flight.keyExchangeSignatureScheme ?? 0]),
                hex([firefox.keyExchange.group, firefox.keyExchange.scheme]))
        compare("CertificateRequest types", (flight.certificateTypes ?? []).map(String.init).joined(separator: ","),
                firefox.certificateTypes.map(String.init).joined(separator: ","))
        compare("CertificateRequest sigalgs", hex(flight.certificateRequestSchemes ?? []), hex(firefox.certificateRequestSchemes))
        compare("ja3s (text)", flight.ja3sText, firefox.ja3sText)
        compare("ja4s", flight.ja4s, firefox.ja4s)
        compare("cert key", "\(certificate.publicKeyAlgorithm) \(certificate.publicKeyCurve)", "1.2.840.10045.2.1 1.2.840.10045.3.1.7")
        compare("cert sig", certificate.signatureAlgorithm, "1.2.840.10045.4.3.2")
        let validity = (certificate.notAfter ?? .distantPast).timeIntervalSince(certificate.notBefore ?? .distantFuture) / 86_400
        compare("cert validity (days)", String(format: "%.1f", validity), "31.0")
        let back = Date().timeIntervalSince(certificate.notBefore ?? .distantFuture) / 86_400
        compare("cert notBefore - now (days)", String(format: "-%.2f", back), "-1.00")
        let name = certificate.subjectCommonName ?? ""
        let nameShape = name.count == 32 && name.allSatisfy { "0123456789abcdef".contains($0) } ? "32 hex" : "'\(name.count) chars'"
        compare("cert subject CN shape", nameShape, "32 hex")
        compare("cert issuer = subject", certificate.issuerEqualsSubject ? "yes" : "no", "yes")
        // NSS writes 32 random bits: 4 bytes, or 5 when the top bit is set (Firefox's draw too).
        compare("cert serial bytes", String(certificate.serialCount), String(firefox.certificateSerialBytes),
                equal: (4...5).contains(certificate.serialCount))
        compare("cert extensions", certificate.hasExtensions ? "some" : "none", "none")
        // The ECDSA signature's DER length (70-72) and the serial's vary per certificate.
        compare("cert DER bytes", String(certificate.derCount), String(firefox.certificateDERBytes),
                equal: abs(certificate.derCount - firefox.certificateDERBytes) <= 3)

        print("DTLS server flight to pion — field: Postern / Firefox ESR 153")
        for (field, ours, theirs, equal) in rows { print("\(equal ? " " : "≠") \(field): \(ours) / \(theirs)") }
        for (field, ours, theirs, equal) in rows {
            #expect(equal, "\(field): Postern \(ours), Firefox \(theirs)")
        }
    }
}
