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

/// No connection resumes an earlier one: a resumed session links the two for the server and
/// changes the hello (pre_shared_key), while Firefox's first hello is what the profile copies.
@Suite(.serialized) struct SessionResumptionTests {
    @Test func aSecondConnectionAfterTicketsArrivedSendsAFreshHello() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        // Two servers with the same name and certificate: s_server serves one connection at a
        // time, and the first stream stays open meanwhile so its session is still in NSS's cache
        // (whose key is the name and the layer's placeholder address, not the port).
        let servers = [try OpenSSLServer(certificates: certificates, arguments: ["-www"]),
                       try OpenSSLServer(certificates: certificates, arguments: ["-www"])]
        defer { servers.forEach { $0.stop() } }
        let configuration = BrowserTLSConfiguration(serverName: TestCertificates.serverName, caFile: certificates.caFile)
        var hellos: [ClientHelloFingerprint] = []
        var streams: [BrowserTLSStream] = []
        defer { streams.forEach { $0.close() } }
        for server in servers {
            let (stream, recording) = try await handshake(port: try await server.port(), configuration)
            // Reading the page makes NSS take the server's NewSessionTickets (s_server sends two).
            try await stream.write(Array("GET / HTTP/1.0\r\n\r\n".utf8))
            #expect(String(decoding: try await readAll(stream), as: UTF8.self).hasPrefix("HTTP/1.0 200 ok"))
            streams.append(stream)
            hellos.append(try ClientHelloFingerprint(records: try #require(recording.written.first)))
        }
        #expect(!hellos[1].extensions.contains(41), "the second hello offered a session to resume")
        #expect(hellos[1].ja4 == hellos[0].ja4)
    }
}
