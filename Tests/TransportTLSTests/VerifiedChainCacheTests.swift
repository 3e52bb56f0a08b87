import Foundation
import PosternTestSupport
import Testing
@testable import TransportTLS

/// The cache of verified chains: a hit only for the same name, trust source and exact chain, never
/// after its lifetime, and never more than its capacity.
@Suite struct VerifiedChainCacheTests {
    func key(_ name: String = "web.postern.test", caFile: String? = "/ca.pem", chain: [UInt8] = [1, 2, 3]) -> VerifiedChainCache.Key {
        VerifiedChainCache.Key(name: name, nameIsIPAddress: false, caFile: caFile, systemStore: [nil, nil], chain: chain)
    }

    @Test func aHitNeedsTheSameNameTrustAndChain() {
        let cache = VerifiedChainCache()
        let now = ContinuousClock.now
        #expect(!cache.contains(key(), now: now))
        cache.insert(key(), now: now)
        #expect(cache.contains(key(), now: now + .seconds(1)))
        #expect(!cache.contains(key("other.postern.test"), now: now))
        #expect(!cache.contains(key(caFile: nil), now: now))
        #expect(!cache.contains(key(chain: [1, 2, 4]), now: now))
        #expect(!cache.contains(VerifiedChainCache.Key(name: "web.postern.test", nameIsIPAddress: false, caFile: "/ca.pem",
                                                      systemStore: ["/other-bundle.pem", nil], chain: [1, 2, 3]), now: now))
    }

    @Test func entriesExpire() {
        let cache = VerifiedChainCache()
        let now = ContinuousClock.now
        cache.insert(key(), now: now)
        #expect(cache.contains(key(), now: now + VerifiedChainCache.lifetime - .milliseconds(1)))
        #expect(!cache.contains(key(), now: now + VerifiedChainCache.lifetime))
        #expect(cache.count == 0)
    }

    @Test func capacityAndSizeAreCapped() {
        let cache = VerifiedChainCache()
        let now = ContinuousClock.now
        for index in 0..<(VerifiedChainCache.capacity + 10) {
            cache.insert(key("host\(index).postern.test"), now: now + .milliseconds(index))
        }
        #expect(cache.count == VerifiedChainCache.capacity)
        // The oldest went first; the newest is there.
        #expect(!cache.contains(key("host0.postern.test"), now: now + .seconds(1)))
        #expect(cache.contains(key("host\(VerifiedChainCache.capacity + 9).postern.test"), now: now + .seconds(1)))
        cache.insert(key(chain: [UInt8](repeating: 7, count: VerifiedChainCache.chainByteLimit + 1)), now: now)
        #expect(!cache.contains(key(chain: [UInt8](repeating: 7, count: VerifiedChainCache.chainByteLimit + 1)), now: now))
    }

    /// ServerCertificateVerifier reads a chain into a buffer of the cache's limit first and only a
    /// larger chain into the largest one: a 20 kB leaf must still be read whole and verify.
    @Test func aChainLargerThanTheFirstBufferIsReadAgainAndVerifies() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        // The leaf issued again by the same CA with 850 more DNS names (about 23 bytes each).
        let directory = certificates.directory
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let names = (0..<850).map { ",DNS:name-\($0).\(TestCertificates.serverName)" }.joined()
        try "subjectAltName=DNS:\(TestCertificates.serverName),IP:127.0.0.1\(names)\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n"
            .write(toFile: path("large.ext"), atomically: true, encoding: .utf8)
        let issued = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/openssl"), [
            "x509", "-req", "-in", path("leaf.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
            "-set_serial", "\(UInt64.random(in: 2...UInt64(Int64.max)))", "-days", "1", "-extfile", path("large.ext"), "-out", path("leaf.pem")])
        try #require(issued.status == 0)
        let pem = try String(contentsOfFile: certificates.certificateFile, encoding: .utf8)
        let base64 = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let der = try #require(Data(base64Encoded: base64))
        #expect(der.count > VerifiedChainCache.chainByteLimit)
        #expect(der.count < ServerCertificateVerifier.chainByteLimit)
        let server = try OpenSSLServer(certificates: certificates, arguments: ["-www"])
        defer { server.stop() }
        let (stream, _) = try await handshake(port: try await server.port(),
                                              BrowserTLSConfiguration(serverName: TestCertificates.serverName, caFile: certificates.caFile))
        defer { stream.close() }
        #expect(stream.protocolVersion == 0x0304)
    }
}
