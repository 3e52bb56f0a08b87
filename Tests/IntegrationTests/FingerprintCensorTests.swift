import PosternTestSupport
import Foundation
import Testing
import TransportBase

/// Issue #21's acceptance under the bed's `fingerprint` censor (docs/TESTBED.md, "The
/// fingerprinting censor"): `postern run` gets to ready through webtunnel and through snowflake
/// with its broker reached over HTTPS through a front (domain-fronted, and the AMP cache), while
/// OpenSSL's default hello (what every Postern TLS connection sent before TransportTLS) to the
/// same web server or front is blocked, so the censor is shown to work in the same run. The
/// judge's log and counters are read before and after, so what an earlier test left there does
/// not count.
extension TestBedSuite {
    static let openSSLDefaultRule = "openssl-3.0-default"

    /// `openssl s_client` (OpenSSL 3.0's default hello, as Postern sent before TransportTLS) to
    /// `address`:443 with `serverName` as SNI: the judge must block its flow (a `block` line naming
    /// the destination and the rule, the rule's counter up by one) and the client must get no
    /// handshake. Waits for the block itself, not for a fixed time. Returns the flows blocked.
    private static func expectOpenSSLDefaultHelloBlocked(_ judge: FingerprintJudgeRecords, address: String,
                                                         serverName: String?, caFile: String) async throws -> Int {
        let offset = judge.logSize
        let before = judge.blocked(by: openSSLDefaultRule)
        let client = Process()
        client.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        client.arguments = ["s_client", "-connect", "\(address):443", "-CAfile", caFile]
            + (serverName.map { ["-servername", $0] } ?? ["-noservername"])
        // Its output goes to a file: read once it is killed, with nothing left to block on.
        let outputFile = TestBed.temporaryDirectory("s_client").appendingPathComponent("output")
        defer { try? FileManager.default.removeItem(at: outputFile.deletingLastPathComponent()) }
        try #require(FileManager.default.createFile(atPath: outputFile.path, contents: nil), "s_client output file")
        let output = try FileHandle(forWritingTo: outputFile)
        defer { try? output.close() }
        client.standardOutput = output
        client.standardError = output
        // Nothing to send: s_client reads its input only once the handshake is done, and then ends
        // at this EOF, so a hello the censor let through shows as an s_client that ended.
        client.standardInput = FileHandle.nullDevice
        try client.run()
        defer {
            if client.isRunning { kill(client.processIdentifier, SIGKILL) }
            client.waitUntilExit()
        }
        let destination = "-> \(address):443: \(openSSLDefaultRule)"
        let deadline = ContinuousClock.now + .seconds(60)
        var blockLine: String?
        while ContinuousClock.now < deadline, client.isRunning {
            blockLine = judge.lines(after: offset).first { $0.hasPrefix("block tcp ") && $0.contains(destination) }
            if blockLine != nil { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(client.isRunning, "s_client ended: the censor let its hello through or the server refused it")
        try #require(blockLine != nil, "no block of OpenSSL's default hello to \(address) in the judge's log: \(judge.lines(after: offset))")
        print("fingerprint censor: \(blockLine ?? "")")
        kill(client.processIdentifier, SIGKILL)
        client.waitUntilExit()
        let printed = (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
        #expect(!printed.contains("Verify return code"), "s_client finished a handshake: \(printed)")
        // The counters are rewritten right after the decision; allow for the judge's next write.
        let statsDeadline = ContinuousClock.now + .seconds(10)
        while judge.blocked(by: openSSLDefaultRule) <= before, ContinuousClock.now < statsDeadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        let after = judge.blocked(by: openSSLDefaultRule)
        #expect(after > before, "the judge's \(openSSLDefaultRule) counter did not move (\(before) -> \(after))")
        return after
    }

    /// The ClientHellos to `address`:443 the judge passed since `offset`, and any block of a flow to it.
    private static func judged(_ judge: FingerprintJudgeRecords, after offset: Int, address: String) -> (passed: [String], blocked: [String]) {
        let lines = judge.lines(after: offset).filter { $0.contains("-> \(address):443") }
        return (lines.filter { $0.hasPrefix("pass tcp ") && $0.contains("ClientHello ja4 ") },
                lines.filter { $0.hasPrefix("block ") })
    }

    @Test func posternRunThroughWebtunnelUnderTheFingerprintCensor() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let bridge = bed["TB_BRIDGE_WEBTUNNEL"]
        try #require(bridge.hasPrefix("webtunnel "), "the test bed's webtunnel stack is not up")
        let webServer = bed["TB_WEBTUNNEL_WEB_ADDR"]
        let host = try #require(URL(string: bed["TB_WEBTUNNEL_URL"])?.host)
        try bed.setCensor("fingerprint")
        defer { try? bed.setCensor("none") }
        let judge = FingerprintJudgeRecords(bed)
        let offset = judge.logSize
        let config = TestBed.temporaryDirectory("webtunnel-fingerprint")
        defer { try? FileManager.default.removeItem(at: config) }

        let started = ContinuousClock.now
        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "39881", "--transport", "webtunnel",
                                      "--bridge", bridge, "--tor-options-file", bed["TB_CLIENT_TORRC"]],
                                     environment: ["SSL_CERT_FILE": bed["TB_WEBTUNNEL_CA"]])
        defer { run.terminate() }
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:39881", timeout: 150)
        try #require(ready != nil, "output: \(run.output)\njudge: \(judge.lines(after: offset))")
        #expect(ready?.contains("route: bridges") == true, "output: \(run.output)")
        print("webtunnel via postern run under the fingerprint censor: ready in \(ContinuousClock.now - started)")
        #expect(run.interruptAndWait() == 0)

        // Postern's hellos to the web server were judged and passed; none was blocked.
        let postern = Self.judged(judge, after: offset, address: webServer)
        #expect(!postern.passed.isEmpty, "the judge saw no hello to the web server: \(judge.lines(after: offset))")
        #expect(postern.blocked.isEmpty, "Postern's flows blocked: \(postern.blocked)")
        print("webtunnel hellos passed: \(postern.passed.count), e.g. \(postern.passed.first ?? "")")

        // The same censor, the same web server: OpenSSL's default hello gets nowhere.
        let total = try await Self.expectOpenSSLDefaultHelloBlocked(judge, address: webServer, serverName: host, caFile: bed["TB_WEBTUNNEL_CA"])
        print("fingerprint censor: \(total) flow(s) blocked by \(Self.openSSLDefaultRule) since it started")
    }

    /// Snowflake's default profile for the broker, randomized-alpn, offers h2,http/1.1 (JA4 part a
    /// ends in the first ALPN's first and last characters).
    private static let helloOffersH2 = #"ja4 t13[di]\d{4}h2_"#

    /// `postern run` with `bridge` alone under the fingerprint censor: ready over WebRTC, every
    /// hello to `front` judged and passed offering h2, the DTLS server flight (Postern is WebRTC's
    /// DTLS server) judged and passed, no flow blocked; then OpenSSL's default hello to the same
    /// front is blocked.
    private func expectSnowflakeReadyUnderFingerprintCensor(_ bed: TestBed, bridge: String, front: String, socksPort: Int,
                                                            route: String) async throws {
        try bed.setCensor("fingerprint")
        defer { try? bed.setCensor("none") }
        let judge = FingerprintJudgeRecords(bed)
        let offset = judge.logSize
        let config = TestBed.temporaryDirectory("snowflake-fingerprint")
        defer { try? FileManager.default.removeItem(at: config) }

        let started = ContinuousClock.now
        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "\(socksPort)", "--transport", "snowflake",
                                      "--bridge", bridge, "--tor-options-file", bed["TB_CLIENT_TORRC"]],
                                     environment: ["SSL_CERT_FILE": bed["TB_SNOWFLAKE_BROKER_CA"]])
        defer { run.terminate() }
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:\(socksPort)", timeout: 180)
        try #require(ready != nil, "output: \(run.output)\njudge: \(judge.lines(after: offset))")
        #expect(ready?.contains("route: bridges") == true, "output: \(run.output)")
        print("snowflake (\(route), WebRTC) via postern run under the fingerprint censor: ready in \(ContinuousClock.now - started)")
        #expect(run.interruptAndWait() == 0)

        let rendezvous = Self.judged(judge, after: offset, address: front)
        #expect(!rendezvous.passed.isEmpty, "the judge saw no hello to the front: \(judge.lines(after: offset))")
        #expect(rendezvous.passed.allSatisfy { $0.range(of: Self.helloOffersH2, options: .regularExpression) != nil },
                "a hello to the front without h2 first: \(rendezvous.passed)")
        let lines = judge.lines(after: offset)
        #expect(!lines.contains { $0.hasPrefix("block ") }, "flows blocked: \(lines.filter { $0.hasPrefix("block ") })")
        let flights = lines.filter { $0.hasPrefix("pass udp ") && $0.contains("DTLS server flight") }
        #expect(!flights.isEmpty, "the judge saw no DTLS server flight: \(lines)")
        print("snowflake hellos to the front passed: \(rendezvous.passed.count), e.g. \(rendezvous.passed.first ?? ""); DTLS server flights passed: \(flights.count), e.g. \(flights.first ?? "")")

        // The same censor, the same front: OpenSSL's default hello gets nowhere.
        let total = try await Self.expectOpenSSLDefaultHelloBlocked(judge, address: front, serverName: nil, caFile: bed["TB_SNOWFLAKE_BROKER_CA"])
        print("fingerprint censor: \(total) flow(s) blocked by \(Self.openSSLDefaultRule) since it started")
    }

    /// The broker domain-fronted as Tor Browser's snowflake lines do (`url=` the broker by a name
    /// nobody resolves, `fronts=` an address the certificate carries): the bed's broker (Go's
    /// crypto/tls and net/http, which pick h2 when offered) behind a front on 127.0.5.1:443 that
    /// passes TLS through to its HTTPS port.
    @Test func posternRunThroughDomainFrontedSnowflakeUnderTheFingerprintCensor() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let plain = bed["TB_BRIDGE_SNOWFLAKE"]
        let brokerURL = bed["TB_SNOWFLAKE_BROKER_URL"]
        try #require(plain.contains("url=\(brokerURL)"), "the test bed's snowflake stack is not up")
        let broker = try #require(URL(string: bed["TB_SNOWFLAKE_BROKER_TLS_URL"]))
        let brokerHost = try #require(broker.host), brokerPort = try #require(broker.port)
        let front = try PassThroughFront(front: TransportEndpoint(parsing: "\(brokerHost):443"),
                                         origin: TransportEndpoint(parsing: "\(brokerHost):\(brokerPort)"))
        defer { front.stop() }
        let bridge = plain.replacingOccurrences(of: "url=\(brokerURL)", with: "url=https://snowflake-broker.invalid/ fronts=\(brokerHost)")
        try await expectSnowflakeReadyUnderFingerprintCensor(bed, bridge: bridge, front: brokerHost, socksPort: 39882, route: "domain-fronted broker")
        #expect(front.connections > 0, "the rendezvous went through the front")
    }

    /// The bed's fronted AMP-cache rendezvous (`TB_BRIDGE_SNOWFLAKE_AMP`: `url=` the broker over
    /// HTTPS, `ampcache=`, `fronts=` the cache's address): the hello goes to the cache, a Go TLS
    /// server too.
    @Test func posternRunThroughFrontedAMPCacheSnowflakeUnderTheFingerprintCensor() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let bridge = bed["TB_BRIDGE_SNOWFLAKE_AMP"]
        try #require(bridge.contains("fronts="), "the test bed's snowflake stack has no fronted AMP cache")
        let front = try #require(bridge.split(separator: " ").first { $0.hasPrefix("fronts=") }.map { String($0.dropFirst("fronts=".count)) })
        try await expectSnowflakeReadyUnderFingerprintCensor(bed, bridge: bridge, front: front, socksPort: 39883, route: "fronted AMP cache")
    }
}
