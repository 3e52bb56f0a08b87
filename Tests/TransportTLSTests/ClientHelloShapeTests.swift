import Foundation
import PosternTestSupport
import Testing
import TransportBase
import TransportTLS

/// The first flight the client writes on a real socket, read field by field and as JA4/JA3, and
/// checked against scripts/tls-research/ja4.py (an independent implementation of the same
/// definitions) and, when Debian's firefox-esr is installed, against Firefox's own hello.
@Suite(.serialized) struct ClientHelloShapeTests {
    /// The ClientHello the stream sends to `serverName` (which the server's certificate need not
    /// match: the hello is written before any answer).
    private func hello(serverName: String, sendsServerName: Bool = true, protocols: [String] = ["h2", "http/1.1"],
                       port: UInt16, caFile: String) async throws -> [UInt8] {
        let socket = try await TCPSocket.connect(to: try TransportEndpoint(parsing: "127.0.0.1:\(port)"), timeout: .seconds(5))
        let recording = RecordingConnection(socket)
        defer { socket.close() }
        _ = try? await BrowserTLSStream.handshake(over: recording, configuration: BrowserTLSConfiguration(
            serverName: serverName, applicationProtocols: protocols, caFile: caFile, sendsServerName: sendsServerName))
        return try #require(recording.written.first)
    }

    /// (JA4, JA3) as scripts/tls-research/ja4.py computes them from the same bytes.
    private func researchScript(_ records: [UInt8]) async throws -> (ja4: String, ja3: String) {
        let script = """
        import sys, struct
        sys.path.insert(0, sys.argv[1])
        import ja4
        raw = bytes.fromhex(sys.stdin.read().strip())
        hs = b''; q = 0
        while q + 5 <= len(raw) and raw[q] == 22:
            l = struct.unpack_from('>H', raw, q + 3)[0]; hs += raw[q + 5:q + 5 + l]; q += 5 + l
        body = hs[4:4 + int.from_bytes(hs[1:4], 'big')]
        d = ja4.fields(*ja4.parse_hello(body))
        print(d['ja4']); print(d['ja3'])
        """
        let directory = ProcessRunner.packageRoot.appendingPathComponent("scripts/tls-research").path
        let result = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", script, directory],
                                                 stdin: records.map { String(format: "%02x", $0) }.joined())
        let lines = result.stdout.split(separator: "\n").map(String.init)
        guard result.status == 0, lines.count == 2 else { throw TestFailure("ja4.py failed: \(result.stderr)") }
        return (lines[0], lines[1])
    }

    @Test func firefoxESRProfileHasFirefoxsJA4CipherPartAndTheDocumentedJA4WithAndWithoutSNI() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let server = try OpenSSLServer(certificates: certificates, arguments: ["-www"])
        defer { server.stop() }
        let port = try await server.port()

        let named = try await hello(serverName: TestCertificates.serverName, port: port, caFile: certificates.caFile)
        let byIP = try await hello(serverName: "127.0.0.1", port: port, caFile: certificates.caFile)
        let unsent = try await hello(serverName: TestCertificates.serverName, sendsServerName: false, port: port, caFile: certificates.caFile)
        let withName = try ClientHelloFingerprint(records: named)
        let withoutName = try ClientHelloFingerprint(records: byIP)
        #expect(withName.ja4 == "t13d1616h2_86a278354501_0c27189014cf")
        #expect(withoutName.ja4 == "t13i1615h2_86a278354501_0c27189014cf")
        #expect(try ClientHelloFingerprint(records: unsent).ja4 == "t13i1615h2_86a278354501_0c27189014cf")

        // Field by field, against Firefox ESR 153 (docs/FINGERPRINTS.md, TLS-LIBRARY-CHOICE.md).
        #expect(withName.cipherSuites == [0x1301, 0x1303, 0x1302, 0xc02b, 0xc02f, 0xcca9, 0xcca8, 0xc02c, 0xc030, 0xc00a, 0xc013, 0xc014,
                                          0x009c, 0x009d, 0x002f, 0x0035])
        // Firefox's order with compress_certificate (27) left out.
        #expect(withName.extensions == [0, 23, 0xff01, 10, 11, 35, 16, 5, 34, 18, 51, 43, 13, 45, 28, 0xfe0d])
        #expect(withName.groups == [0x001d, 0x0017, 0x0018, 0x0019, 0x0100, 0x0101])
        #expect(withName.keyShares.map(\.group) == [0x001d, 0x0017])
        #expect(withName.signatureAlgorithms == [0x0403, 0x0503, 0x0603, 0x0804, 0x0805, 0x0806, 0x0401, 0x0501, 0x0601, 0x0203, 0x0201])
        #expect(withName.applicationProtocols == ["h2", "http/1.1"])
        #expect(withName.supportedVersions == [0x0304, 0x0303])
        #expect(withName.pointFormats == [0])
        #expect(!withName.extensions.contains(27))

        for records in [named, byIP, unsent] {
            let ours = try ClientHelloFingerprint(records: records)
            let research = try await researchScript(records)
            #expect(ours.ja4 == research.ja4)
            #expect(ours.ja3 == research.ja3)
        }
    }

    /// Without a browser: the profile's hello against the one recorded from Firefox ESR 153,
    /// field by field; only the fields NSS 3.87 cannot reach differ.
    @Test func firefoxESRProfileEqualsTheRecordedFirefoxHelloButForWhatNSS387Lacks() throws {
        let ours = HelloFields(try ClientHelloFingerprint(presentedBy: BrowserTLSConfiguration(serverName: "localhost")))
        let differing = ours.differences(from: .recordedFirefoxESR)
        #expect(Set(differing.map(\.name)) == HelloFields.unreachableByNSS387,
                "\(differing.map { "\($0.name): ours \($0.ours), Firefox \($0.theirs)" })")
        #expect(ours.keyShareLengths == [32, 65])
        #expect(ours.extensions == HelloFields.recordedFirefoxESR.extensions.filter { $0 != 27 })
    }

    @Test func alpnIsSentInTheGivenOrderOrNotAtAll() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let server = try OpenSSLServer(certificates: certificates, arguments: ["-www"])
        defer { server.stop() }
        let port = try await server.port()
        let one = try ClientHelloFingerprint(records: try await hello(serverName: "127.0.0.1", protocols: ["http/1.1"], port: port,
                                                                       caFile: certificates.caFile))
        #expect(one.applicationProtocols == ["http/1.1"])
        #expect(one.ja4.hasPrefix("t13i1615h1_"), "\(one.extensions)")
        let three = try ClientHelloFingerprint(records: try await hello(serverName: "127.0.0.1", protocols: ["a", "b", "c"], port: port,
                                                                         caFile: certificates.caFile))
        #expect(three.applicationProtocols == ["a", "b", "c"])
        let none = try ClientHelloFingerprint(records: try await hello(serverName: "127.0.0.1", protocols: [], port: port,
                                                                        caFile: certificates.caFile))
        #expect(none.applicationProtocols.isEmpty && !none.extensions.contains(16))
        #expect(none.ja4.hasPrefix("t13i161400_"), "\(none.extensions)")
    }

    @Test func helloParserRefusesTruncatedAndForeignBytes() {
        #expect(throws: TransportError.self) { try ClientHelloFingerprint(records: []) }
        #expect(throws: TransportError.self) { try ClientHelloFingerprint(records: [22, 3, 1, 0, 4, 1, 0, 0, 200]) }
        #expect(throws: TransportError.self) { try ClientHelloFingerprint(records: Array("GET / HTTP/1.1\r\n\r\n".utf8)) }
    }
}
