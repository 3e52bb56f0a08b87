import Foundation
import PosternTestSupport
import Testing
import TransportBase
@testable import TransportTLS

/// DTLSServerSocket (NSS, Firefox's WebRTC settings) against a real NSS DTLS client on the same
/// datagram layer, datagrams moved by hand: DTLS 1.2 and, when the client offers it, DTLS 1.3;
/// the server's flight and certificate read back from the bytes it sent; hostile peers.
@Suite struct DTLSServerSocketTests {
    struct Run {
        var serverFirstFlight: [[UInt8]] = []
        var serverData: [[UInt8]] = []
        var clientData: [[UInt8]] = []
    }

    /// Moves datagrams both ways until both ends are done (at most 20 rounds, no loss).
    @discardableResult
    static func handshake(_ server: DTLSServerSocket, _ client: DTLSClientSocket) throws -> Run {
        var run = Run()
        var toServer = try client.handleTimeout()
        for round in 0..<20 {
            var toClient: [[UInt8]] = []
            for datagram in toServer {
                let (send, data) = try server.receive(datagram)
                toClient += send
                run.serverData += data
            }
            if round == 0 { run.serverFirstFlight = toClient }
            toServer = []
            for datagram in toClient {
                let (send, data) = try client.receive(datagram)
                toServer += send
                run.clientData += data
            }
            if server.handshakeComplete && client.handshakeComplete && toServer.isEmpty { break }
        }
        return run
    }

    static func pair(serverProfile: DTLSProfile = .firefoxWebRTC, clientProfile: DTLSProfile = .firefoxWebRTC,
                     serverTimeout: Duration = .seconds(20)) throws -> (DTLSServerSocket, DTLSClientSocket) {
        let server = try DTLSServerSocket(profile: serverProfile, handshakeTimeout: serverTimeout)
        let client = try DTLSClientSocket(profile: clientProfile)
        try server.expectPeerCertificate(sha256: client.identity.sha256Fingerprint)
        try client.expectPeerCertificate(sha256: server.identity.sha256Fingerprint)
        return (server, client)
    }

    static var dtls12Client: DTLSProfile {
        var profile = DTLSProfile.firefoxWebRTC
        profile.allowsDTLS13 = false
        return profile
    }

    /// SCTP-sized messages both ways after the handshake.
    static func exchange(_ server: DTLSServerSocket, _ client: DTLSClientSocket) throws {
        let up = (0..<1100).map { UInt8(truncatingIfNeeded: $0) }
        var received: [[UInt8]] = []
        for datagram in try client.send(up) { received += try server.receive(datagram).data }
        #expect(received == [up])
        let down = Array(up.reversed())
        received = []
        for datagram in try server.send(down) { received += try client.receive(datagram).data }
        #expect(received == [down])
    }

    @Test func dtls12WithAClientThatOffersOnlyDTLS12() throws {
        let (server, client) = try Self.pair(clientProfile: Self.dtls12Client)
        let run = try Self.handshake(server, client)
        #expect(server.handshakeComplete && client.handshakeComplete)
        #expect(server.negotiation == DTLSNegotiation(version: 0xfefd, cipherSuite: 0xc02b, srtpProfile: 0x0007))
        #expect(client.negotiation?.srtpProfile == 0x0007)
        #expect(server.peerCertificateSHA256 == client.identity.sha256Fingerprint)
        try Self.exchange(server, client)

        // The flight as sent: the fields docs/FINGERPRINTS.md compares that do not depend on the
        // client's extension order (that part is compared against pion in the test bed).
        let flight = try DTLSServerFlight(datagrams: run.serverFirstFlight)
        #expect(!flight.helloVerifyRequest)
        #expect(flight.serverHelloVersion == 0xfefd)
        #expect(flight.sessionIDLength == 32)
        #expect(flight.cipherSuite == 0xc02b)
        #expect(flight.pointFormats == [0])
        #expect(flight.srtpProfile == 0x0007)
        #expect(flight.keyExchangeGroup == 0x001d && flight.keyExchangeSignatureScheme == 0x0403)
        #expect(flight.certificateTypes == [1, 64, 2])
        #expect(flight.certificateRequestSchemes == [0x0403, 0x0503, 0x0603, 0x0203, 0x0804, 0x0805, 0x0806,
                                                     0x0401, 0x0501, 0x0601, 0x0201, 0x0402, 0x0502, 0x0602, 0x0202])
        #expect(run.serverFirstFlight.allSatisfy { $0.count <= 1472 })
    }

    @Test func dtls13WhenTheClientOffersIt() throws {
        let (server, client) = try Self.pair()
        let run = try Self.handshake(server, client)
        #expect(server.handshakeComplete && client.handshakeComplete)
        #expect(server.negotiation == DTLSNegotiation(version: 0xfefc, cipherSuite: 0x1301, srtpProfile: 0x0007))
        #expect(client.negotiation?.isDTLS13 == true)
        // DTLS 1.3 encrypts everything after ServerHello: the plaintext part is the hello alone.
        let flight = try DTLSServerFlight(datagrams: run.serverFirstFlight)
        #expect(flight.serverHelloVersion == 0xfefd)  // legacy_version; the real one is in supported_versions
        #expect(flight.extensions.contains(0x002b) && flight.extensions.contains(0x0033))
        #expect(flight.certificate == nil)
        try Self.exchange(server, client)
    }

    @Test func theCertificateHasFirefoxsShape() throws {
        let identity = try WebRTCIdentity()
        let fields = try DTLSServerFlight.certificateFields(identity.certificateDER)
        let name = try #require(fields.subjectCommonName)
        #expect(name.count == 32 && name.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(fields.issuerEqualsSubject)
        // NSS encodes the serial from 32 random bits: 4 bytes, 5 with the top bit set (a leading
        // zero), fewer when the top bytes happen to be zero.
        #expect((1...5).contains(fields.serialCount))
        let notBefore = try #require(fields.notBefore), notAfter = try #require(fields.notAfter)
        #expect(abs(notAfter.timeIntervalSince(notBefore) - 31 * 86_400) < 2)
        #expect(abs(Date().timeIntervalSince(notBefore) - 86_400) < 120)
        #expect(fields.publicKeyAlgorithm == "1.2.840.10045.2.1" && fields.publicKeyCurve == "1.2.840.10045.3.1.7")
        #expect(fields.signatureAlgorithm == "1.2.840.10045.4.3.2")
        #expect(!fields.hasExtensions)
        #expect((325...333).contains(identity.certificateDER.count))
        let other = try WebRTCIdentity()
        #expect(other.sha256Fingerprint != identity.sha256Fingerprint)
        #expect(try DTLSServerFlight.certificateFields(other.certificateDER).subjectCommonName != name)
    }

    @Test func aCertificateOtherThanTheSDPsFailsTheHandshake() throws {
        let server = try DTLSServerSocket()
        let client = try DTLSClientSocket(profile: Self.dtls12Client)
        try server.expectPeerCertificate(sha256: [UInt8](repeating: 7, count: 32))
        try client.expectPeerCertificate(sha256: server.identity.sha256Fingerprint)
        #expect {
            try Self.handshake(server, client)
        } throws: { error in
            (error as? TransportError)?.code == .tlsCertificateRejected
        }
        #expect(!server.handshakeComplete)
    }

    @Test func noDatagramIsTakenBeforeThePeersDigestIsKnown() throws {
        let server = try DTLSServerSocket()
        #expect(throws: TransportError.self) { try server.receive([22, 0xfe, 0xfd]) }
        #expect(throws: TransportError.self) { try server.expectPeerCertificate(sha256: [1, 2, 3]) }
    }

    @Test func garbageDatagramsAreDroppedAndTheHandshakeStillCompletes() throws {
        let (server, client) = try Self.pair(clientProfile: Self.dtls12Client)
        var generator = SystemRandomNumberGenerator()
        for index in 0..<100 {
            var datagram = (0..<Int.random(in: 1...1400, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if index % 2 == 0, datagram.count > 13 { datagram[0] = 22; datagram[1] = 0xfe; datagram[2] = 0xfd }  // plausible headers
            let (send, data) = try server.receive(datagram)
            #expect(data.isEmpty)
            _ = send
        }
        // Too long for the layer: dropped, counted, nothing thrown.
        _ = try server.receive([UInt8](repeating: 22, count: 20_000))
        #expect(server.droppedDatagrams == 1)
        try Self.handshake(server, client)
        #expect(server.handshakeComplete && client.handshakeComplete)
        try Self.exchange(server, client)
    }

    @Test func aFloodBeforeTheHandshakeIsCapped() throws {
        let (server, _) = try Self.pair()
        var thrown: TransportError?
        var taken = 0
        for _ in 0..<(DTLSServerSocket.handshakeDatagramLimit + 100) {
            do {
                _ = try server.receive([23, 0xfe, 0xfd, 0, 1, 0, 0, 0, 0, 0, 1, 0, 2, 0xde, 0xad])
                taken += 1
            } catch {
                thrown = error
                break
            }
        }
        #expect(taken == DTLSServerSocket.handshakeDatagramLimit)
        #expect(thrown?.code == .dtlsDatagramFlood)
    }

    @Test func aSilentPeerMeetsTheHandshakeDeadline() async throws {
        let (server, client) = try Self.pair(serverTimeout: .milliseconds(300))
        for datagram in try client.handleTimeout() { _ = try server.receive(datagram) }
        try await Task.sleep(for: .milliseconds(400))
        #expect {
            try server.handleTimeout()
        } throws: { error in
            (error as? TransportError)?.code == .tlsHandshakeTimedOut
        }
    }

    /// The randomized profile: every handshake completes, and the flights differ.
    @Test func randomizedFlightsDifferAndInteroperate() throws {
        var flights = Set<[UInt16]>()
        var suites = Set<UInt16>()
        for _ in 0..<12 {
            let (server, client) = try Self.pair(serverProfile: .randomized(), clientProfile: Self.dtls12Client)
            let run = try Self.handshake(server, client)
            #expect(server.handshakeComplete && client.handshakeComplete)
            let flight = try DTLSServerFlight(datagrams: run.serverFirstFlight)
            let schemes = try #require(flight.certificateRequestSchemes)
            #expect(schemes.contains(0x0403))
            flights.insert(schemes + [flight.cipherSuite, flight.srtpProfile ?? 0])
            suites.insert(flight.cipherSuite)
        }
        #expect(flights.count >= 10)
        #expect(suites.count >= 2)
    }
}
