import Foundation
import PosternTestSupport
import Testing
import TransportBase
import TransportTLS

/// Connects to 127.0.0.1:`port` and runs the handshake; the connection records what the client wrote.
func handshake(port: UInt16, _ configuration: BrowserTLSConfiguration) async throws -> (BrowserTLSStream, RecordingConnection) {
    let socket = try await TCPSocket.connect(to: try TransportEndpoint(parsing: "127.0.0.1:\(port)"), timeout: .seconds(5))
    let recording = RecordingConnection(socket)
    do {
        return (try await BrowserTLSStream.handshake(over: recording, configuration: configuration), recording)
    } catch {
        socket.close()
        throw error
    }
}

/// Reads until end of stream (or `limit` bytes).
func readAll(_ stream: BrowserTLSStream, limit: Int = 1 << 20) async throws -> [UInt8] {
    var all: [UInt8] = []
    while all.count < limit {
        let chunk = try await stream.read(maximumCount: 65536)
        if chunk.isEmpty { break }
        all += chunk
    }
    return all
}

/// The handshake, ALPN and data both ways against openssl s_server (OpenSSL 3.0) on loopback.
@Suite(.serialized) struct BrowserTLSStreamTests {
    @Test func handshakeNegotiatesTLS13AndTheServersALPNChoiceThenCarriesARequest() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        for (serverList, chosen) in [("h2,http/1.1", "h2"), ("http/1.1", "http/1.1")] {
            let server = try OpenSSLServer(certificates: certificates, arguments: ["-www", "-alpn", serverList])
            defer { server.stop() }
            let (stream, _) = try await handshake(port: try await server.port(),
                                                  BrowserTLSConfiguration(serverName: TestCertificates.serverName, caFile: certificates.caFile))
            defer { stream.close() }
            #expect(stream.applicationProtocol == chosen)
            #expect(stream.protocolVersion == 0x0304)
            #expect(stream.cipherSuite == 0x1301)  // the profile's first suite; s_server follows the client's order
            try await stream.write(Array("GET / HTTP/1.0\r\n\r\n".utf8))
            let page = String(decoding: try await readAll(stream), as: UTF8.self)
            #expect(page.hasPrefix("HTTP/1.0 200 ok"))
            #expect(page.contains("TLSv1.3"))
        }
    }

    @Test func largeWritesComeBackIntactFromAnEchoingServer() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let server = try OpenSSLServer(certificates: certificates, arguments: ["-rev"])
        defer { server.stop() }
        let (stream, _) = try await handshake(port: try await server.port(),
                                              BrowserTLSConfiguration(serverName: "127.0.0.1", applicationProtocols: [], caFile: certificates.caFile))
        defer { stream.close() }
        #expect(stream.applicationProtocol == nil)
        // 64 lines of 1000 bytes in one write: several records, several socket writes.
        let lines = (0..<64).map { index in String(repeating: String(UnicodeScalar(UInt8(97 + index % 26))), count: 999) + "\(index % 10)" }
        try await stream.write(Array(lines.map { $0 + "\n" }.joined().utf8))
        var received: [UInt8] = []
        let expectedCount = lines.reduce(0) { $0 + $1.utf8.count + 1 }
        while received.count < expectedCount {
            let chunk = try await stream.read(maximumCount: 4096)
            if chunk.isEmpty { break }
            received += chunk
        }
        let answered = String(decoding: received, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(answered == lines.map { String($0.reversed()) })
        await stream.closeWrite()
    }
}

/// Certificates are verified with OpenSSL against the trust given and the name dialled.
@Suite(.serialized) struct CertificateVerificationTests {
    private func failure(_ configuration: BrowserTLSConfiguration, port: UInt16) async -> TransportError? {
        do {
            let (stream, _) = try await handshake(port: port, configuration)
            stream.close()
            return nil
        } catch {
            return error as? TransportError
        }
    }

    @Test func untrustedChainWrongNameAndWrongIPAreRejectedAndTheRightOnesAccepted() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let server = try OpenSSLServer(certificates: certificates, arguments: ["-www"])
        defer { server.stop() }
        let port = try await server.port()

        let untrusted = await failure(BrowserTLSConfiguration(serverName: TestCertificates.serverName), port: port)
        #expect(untrusted?.code == .tlsCertificateRejected)
        #expect(untrusted?.message.contains("local issuer") == true, "\(String(describing: untrusted))")

        let wrongName = await failure(BrowserTLSConfiguration(serverName: "other.test", caFile: certificates.caFile), port: port)
        #expect(wrongName?.code == .tlsCertificateRejected)
        #expect(wrongName?.message.contains("hostname mismatch") == true, "\(String(describing: wrongName))")

        let wrongIP = await failure(BrowserTLSConfiguration(serverName: "127.0.0.2", caFile: certificates.caFile), port: port)
        #expect(wrongIP?.code == .tlsCertificateRejected)
        #expect(wrongIP?.message.contains("IP address mismatch") == true, "\(String(describing: wrongIP))")

        #expect(await failure(BrowserTLSConfiguration(serverName: TestCertificates.serverName, caFile: certificates.caFile), port: port) == nil)
        #expect(await failure(BrowserTLSConfiguration(serverName: "127.0.0.1", caFile: certificates.caFile), port: port) == nil)
        // The name is verified even when it is not sent (utls-nosni).
        #expect(await failure(BrowserTLSConfiguration(serverName: TestCertificates.serverName, caFile: certificates.caFile,
                                                      sendsServerName: false), port: port) == nil)
        let unsentWrongName = await failure(BrowserTLSConfiguration(serverName: "other.test", caFile: certificates.caFile,
                                                                    sendsServerName: false), port: port)
        #expect(unsentWrongName?.code == .tlsCertificateRejected)
    }
}

/// TLS 1.3 resumption as a browser returning to a server (ResumptionTokenCache): the next
/// connection offers a ticket the server issued, the hello is the same one with pre_shared_key
/// added last and session_ticket gone, each ticket goes out once, and `resumesSessions: false` always sends a full hello.
@Suite(.serialized) struct SessionResumptionTests {
    @Test func laterConnectionsResumeWithAFreshTicketEachAndOptingOutSendsAFullHello() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let server = try OpenSSLServer(certificates: certificates, arguments: ["-www"])
        defer { server.stop() }
        let port = try await server.port()
        let configuration = BrowserTLSConfiguration(serverName: TestCertificates.serverName, caFile: certificates.caFile)
        var optedOut = configuration
        optedOut.resumesSessions = false

        var fields: [ClientHelloFingerprint] = []
        var resumed: [Bool] = []
        for connection in [configuration, configuration, configuration, optedOut] {
            let (stream, recording) = try await handshake(port: port, connection)
            // Reading the page makes NSS take the server's NewSessionTickets (s_server sends two
            // after a full handshake); -www closes after one page.
            try await stream.write(Array("GET / HTTP/1.0\r\n\r\n".utf8))
            #expect(String(decoding: try await readAll(stream), as: UTF8.self).hasPrefix("HTTP/1.0 200 ok"))
            resumed.append(stream.isResumed)
            stream.close()
            fields.append(try ClientHelloFingerprint(records: try #require(recording.written.first)))
        }
        #expect(resumed == [false, true, true, false])
        #expect(!fields[0].extensions.contains(41) && !fields[3].extensions.contains(41))
        // pre_shared_key, last as RFC 8446 requires, and no session_ticket (NSS, so Firefox too,
        // leaves out TLS 1.2's ticket extension when it resumes a TLS 1.3 session); everything
        // else as in the full hello.
        #expect(fields[0].extensions.contains(35))
        for index in [1, 2] {
            #expect(fields[index].extensions == fields[0].extensions.filter { $0 != 35 } + [41])
            #expect(fields[index].cipherSuites == fields[0].cipherSuites)
            #expect(fields[index].keyShares == fields[0].keyShares)
            #expect(fields[index].signatureAlgorithms == fields[0].signatureAlgorithms)
        }
        #expect(fields[0].preSharedKeyIdentities.isEmpty)
        let identities = [fields[1].preSharedKeyIdentities, fields[2].preSharedKeyIdentities]
        #expect(identities.allSatisfy { $0.count == 1 })
        #expect(identities[0] != identities[1], "a ticket was offered twice")
    }

    /// A TLS 1.2 session is never resumed (no fresh ECDHE in its abbreviated handshake; and NSS
    /// 3.87 fails a hello without extended_master_secret that offers a session made with it, which
    /// randomized draws would hit): every connection to a TLS 1.2 server is a full handshake, and
    /// every one completes, for each profile.
    @Test func aTLS12ServerIsNeverResumed() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let server = try OpenSSLServer(certificates: certificates, arguments: ["-www", "-no_tls1_3"])
        defer { server.stop() }
        let port = try await server.port()
        for profile in BrowserTLSProfile.all {
            for _ in 0..<4 {
                let (stream, _) = try await handshake(port: port, BrowserTLSConfiguration(
                    serverName: TestCertificates.serverName, applicationProtocols: ["http/1.1"], profile: profile, caFile: certificates.caFile))
                try await stream.write(Array("GET / HTTP/1.0\r\n\r\n".utf8))
                #expect(String(decoding: try await readAll(stream), as: UTF8.self).hasPrefix("HTTP/1.0 200 ok"), "\(profile)")
                #expect(stream.protocolVersion == 0x0303 && !stream.isResumed, "\(profile)")
                stream.close()
            }
        }
    }
}
