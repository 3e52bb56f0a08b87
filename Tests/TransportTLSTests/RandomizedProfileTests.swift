import Foundation
import PosternTestSupport
import Testing
import TransportBase
import TransportTLS
import TransportWire

/// The randomized profiles (uTLS's HelloRandomized family) on real connections to openssl s_server:
/// each connection draws its own hello, every draw completes a handshake, and none is OpenSSL's
/// default hello, which is captured here from `openssl s_client` itself.
@Suite(.serialized) struct RandomizedProfileTests {
    /// OpenSSL 3.0's default ClientHello (curl's, and Postern's before issue #21), as
    /// docs/FINGERPRINTS.md measured it: JA4 with and without SNI, and its cipher hash.
    static let openSSLDefaultJA4 = ["t13d311000_e8f1e7e78f70_1f22a2ca17c4", "t13i310900_e8f1e7e78f70_1f22a2ca17c4"]
    static let openSSLCipherHash = "e8f1e7e78f70"

    /// The first flight `openssl s_client` writes to a listener of ours: OpenSSL's own default
    /// hello on this machine, by name (SNI) or by IP (none).
    private func openSSLClientHello(serverName: String?) async throws -> ClientHelloFingerprint {
        let listener = try LoopbackListener()
        defer { listener.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_client", "-connect", "127.0.0.1:\(listener.port)"] + (serverName.map { ["-servername", $0] } ?? ["-noservername"])
        process.standardInput = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let flight = try await firstRecord(sentBy: process, to: listener, acceptWithin: .seconds(30), readWithin: .seconds(30))
        return try ClientHelloFingerprint(records: flight)
    }

    /// `count` connections with `profile`, each completing a request; the hellos they sent.
    private func hellos(_ profile: BrowserTLSProfile, count: Int, serverName: String) async throws -> [ClientHelloFingerprint] {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let server = try OpenSSLServer(certificates: certificates, arguments: ["-www"])
        defer { server.stop() }
        let port = try await server.port()
        var hellos: [ClientHelloFingerprint] = []
        for index in 0..<count {
            let configuration = BrowserTLSConfiguration(serverName: serverName, applicationProtocols: ["http/1.1"], profile: profile,
                                                        caFile: certificates.caFile, handshakeTimeout: .seconds(30))
            let (stream, recording) = try await handshake(port: port, configuration)
            defer { stream.close() }
            #expect(stream.protocolVersion == 0x0304, "connection \(index)")
            try await stream.write(Array("GET / HTTP/1.0\r\n\r\n".utf8))
            let page = String(decoding: try await readAll(stream), as: UTF8.self)
            #expect(page.hasPrefix("HTTP/1.0 200 ok"), "connection \(index) of \(profile.name) did not complete: \(page.prefix(80))")
            hellos.append(try ClientHelloFingerprint(records: try #require(recording.written.first)))
        }
        return hellos
    }

    @Test(arguments: [BrowserTLSProfile.randomizedALPN, .randomizedNoALPN, .randomized])
    func twentyConnectionsGiveDistinctHellosNoneOpenSSLsAndAllComplete(profile: BrowserTLSProfile) async throws {
        let openSSL = [try await openSSLClientHello(serverName: TestCertificates.serverName), try await openSSLClientHello(serverName: nil)]
        // The capture is OpenSSL's default hello: the cipher list docs/FINGERPRINTS.md names.
        #expect(openSSL.allSatisfy { $0.ja4CipherHash == Self.openSSLCipherHash }, "\(openSSL.map(\.ja4))")

        let hellos = try await hellos(profile, count: 20, serverName: TestCertificates.serverName)
        let ja3 = Set(hellos.map(\.ja3)), ja4 = Set(hellos.map(\.ja4))
        print("\(profile.name): 20 connections, \(ja3.count) distinct JA3, \(ja4.count) distinct JA4")
        #expect(hellos.count == 20)
        #expect(ja3.count >= 15, "\(profile.name): \(ja3.count) distinct JA3 in 20")
        #expect(ja4.count >= 5, "\(profile.name): \(ja4.count) distinct JA4 in 20: \(ja4.sorted())")
        for hello in hellos {
            #expect(!openSSL.map(\.ja3).contains(hello.ja3))
            #expect(!openSSL.map(\.ja4).contains(hello.ja4))
            #expect(!Self.openSSLDefaultJA4.contains(hello.ja4))
            #expect(hello.ja4CipherHash != Self.openSSLCipherHash, "\(hello.cipherSuites)")
        }
        let alpn = Set(hellos.map(\.applicationProtocols))
        if profile == .randomizedALPN {
            #expect(alpn == [["http/1.1"]])
        } else if profile == .randomizedNoALPN {
            #expect(alpn == [[]])
        } else {
            #expect(alpn.isSubset(of: [[], ["http/1.1"]]))
        }
    }

    /// Many draws, made in memory (nothing sent), each checked for what makes a hello plausible.
    @Test(arguments: [BrowserTLSProfile.randomizedALPN, .randomizedNoALPN, .randomized])
    func everyDrawIsPlausible(profile: BrowserTLSProfile) throws {
        // Suites real clients send and NSS implements; OpenSSL's DHE, CCM and SHA-2 CBC suites never.
        let allowedSuites: Set<UInt16> = [0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc009, 0xc013,
                                          0xc00a, 0xc014, 0x009c, 0x009d, 0x002f, 0x0035, 0xc012, 0x000a]
        var offeredALPN = 0
        var ja4: Set<String> = []
        for draw in 0..<300 {
            let hello = try ClientHelloFingerprint(presentedBy: BrowserTLSConfiguration(
                serverName: "www.example.com", applicationProtocols: ["h2", "http/1.1"], profile: profile))
            let context = "draw \(draw): \(hello.ja4)"
            #expect(Set(hello.cipherSuites.prefix(3)) == [0x1301, 0x1302, 0x1303], "\(context)")
            #expect(hello.cipherSuites.first == 0x1301, "\(context)")
            #expect(hello.cipherSuites.contains(0xc02b) && hello.cipherSuites.contains(0xc02f), "\(context)")
            #expect(Set(hello.cipherSuites).isSubset(of: allowedSuites), "\(context): \(hello.cipherSuites)")
            #expect(Set(hello.cipherSuites).count == hello.cipherSuites.count, "\(context): a suite twice")
            #expect(hello.supportedVersions == [0x0304, 0x0303], "\(context)")
            #expect(Array(hello.groups.prefix(2)) == [0x001d, 0x0017], "\(context)")
            #expect(hello.keyShares.first?.group == 0x001d && hello.keyShares.count <= 2, "\(context)")
            #expect(hello.signatureAlgorithms.contains(0x0403) && hello.signatureAlgorithms.contains(0x0804), "\(context)")
            #expect(hello.pointFormats == [0], "\(context)")
            #expect(hello.hasServerName, "\(context)")
            #expect(!hello.extensions.contains(22), "\(context): encrypt_then_mac is OpenSSL's, no browser sends it")
            #expect(hello.ja4CipherHash != Self.openSSLCipherHash, "\(context)")
            if !hello.applicationProtocols.isEmpty {
                #expect(hello.applicationProtocols == ["h2", "http/1.1"], "\(context)")
                offeredALPN += 1
            }
            ja4.insert(hello.ja4)
        }
        if profile == .randomizedALPN {
            #expect(offeredALPN == 300)
        } else if profile == .randomizedNoALPN {
            #expect(offeredALPN == 0)
        } else {
            #expect(offeredALPN > 150 && offeredALPN < 280, "ALPN in \(offeredALPN) of 300 (drawn with probability 0.7)")
        }
        #expect(ja4.count >= 50, "\(ja4.count) distinct JA4 in 300 draws")
    }
}
