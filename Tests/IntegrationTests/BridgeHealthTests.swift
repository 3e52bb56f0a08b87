import PosternTestSupport
import Foundation
import Testing
import TransportTestSupport

extension TestBedSuite {
    /// Issue 8: `postern bridges test` over ten bridges: the test bed's obfs4, vanilla and
    /// snowflake bridges, five extra obfs4proxy servers, one obfs4proxy that was stopped and one
    /// line with another server's cert. The stopped and the wrong-cert bridges are flagged with
    /// their reasons, the rest pass, within 15 s.
    @Test func bridgesTestFlagsStoppedAndWrongCertBridges() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let snowflake = bed["TB_BRIDGE_SNOWFLAKE"]
        try #require(!snowflake.isEmpty, "the test bed's snowflake stack is not up")
        try bed.setCensor("none")
        let config = TestBed.temporaryDirectory("bridges-test")
        defer { try? FileManager.default.removeItem(at: config) }

        let orPort = try LoopbackPeer(.sink)
        defer { orPort.stop() }
        var servers: [Obfs4ProxyServer] = []
        defer { servers.forEach { $0.stop() } }
        for _ in 0..<7 { servers.append(try await Obfs4ProxyServer(orPort: orPort.port, iatMode: 0)) }
        func line(endpoint: Obfs4ProxyServer, certFrom: Obfs4ProxyServer, fingerprint: String) -> String {
            "obfs4 \(endpoint.endpoint) \(fingerprint) cert=\(certFrom.arguments["cert"] ?? "") iat-mode=0"
        }
        let healthy = (0..<5).map { line(endpoint: servers[$0], certFrom: servers[$0], fingerprint: String(repeating: "\($0 + 1)", count: 40)) }
        let stopped = line(endpoint: servers[5], certFrom: servers[5], fingerprint: String(repeating: "A", count: 40))
        let wrongCert = line(endpoint: servers[6], certFrom: servers[0], fingerprint: String(repeating: "B", count: 40))
        servers[5].stop()

        let lines = [bed["TB_BRIDGE_OBFS4"], bed["TB_BRIDGE_VANILLA"], snowflake] + healthy + [stopped, wrongCert]
        let add = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "add", "--config-dir", config.path] + lines)
        try #require(add.status == 0, "bridges add: \(add.stdout) \(add.stderr)")
        let list = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "list", "--json", "--unsafe-logging", "--config-dir", config.path])
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any])
        var idByLine: [String: String] = [:]
        for bridge in listed["bridges"] as? [[String: Any]] ?? [] {
            idByLine[bridge["line"] as? String ?? ""] = bridge["id"] as? String
        }
        let stoppedID = try #require(idByLine[stopped], "listed: \(idByLine.keys.map { $0.prefix(30) })")
        let wrongCertID = try #require(idByLine[wrongCert])
        try #require(idByLine.count == 10)

        let started = ContinuousClock.now
        let run = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "test", "--json", "--timeout", "4", "--parallel", "10",
                                                                "--config-dir", config.path])
        let elapsed = ContinuousClock.now - started
        print("bridges test of 10 bridges: \(elapsed)\n\(run.stdout)")
        #expect(run.status == 1, "dead bridges make the exit status 1: \(run.stderr)")
        #expect(elapsed < .seconds(15), "ten bridges in parallel within 15 s")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let results = try #require(report["bridges"] as? [[String: Any]])
        #expect(results.count == 10)
        #expect(report["dead"] as? Int == 2)
        for result in results {
            let resultID = result["id"] as? String ?? ""
            let reason = result["reason"] as? String ?? ""
            let alive = result["alive"] as? Bool
            switch resultID {
            case stoppedID:
                #expect(alive == false && reason.contains("refused"), "stopped obfs4 server: \(result)")
            case wrongCertID:
                #expect(alive == false && reason.contains("wrong cert"), "wrong cert: \(result)")
                #expect((result["tcp"] as? [String: Any])?["result"] as? String == "ok", "the port is open; only the cert is wrong")
            default:
                #expect(alive == true, "healthy bridge flagged: \(result)")
            }
            #expect(idByLine.values.contains(resultID), "each result carries its store ID")
        }
        let transports = Dictionary(grouping: results, by: { $0["transport"] as? String ?? "" })
        let snowflakeResult = try #require(transports["snowflake"]?.first)
        #expect((snowflakeResult["handshake"] as? [String: Any])?["result"] as? String == "ok", "broker answered, data channel open")
        let obfs4Handshakes = (transports["obfs4"] ?? []).compactMap { ($0["handshake"] as? [String: Any])?["result"] as? String }
        #expect(obfs4Handshakes.filter { $0 == "ok" }.count == 6)

        // Scrubbed: no address, fingerprint or cert in the report, text or JSON.
        let text = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "test", stoppedID, wrongCertID, "--timeout", "3",
                                                                 "--config-dir", config.path])
        #expect(text.status == 1)
        #expect(text.stdout.contains("FAILED: refused: the connection was refused (a closed port, or a censor)") && text.stdout.contains(stoppedID), "table: \(text.stdout)")
        for secret in lines.flatMap(TestBed.bridgeSecrets) {
            #expect(!run.stdout.contains(secret) && !text.stdout.contains(secret), "bridge data leaked: \(secret.prefix(6))…")
        }
    }

    /// `--bootstrap`: a real tor bootstrap through one bridge alone, in a child postern run, under
    /// block-tor (so only the bridge can work).
    @Test func bridgesTestBootstrapsThroughOneBridge() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("block-tor")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("bridges-test-bootstrap")
        defer { try? FileManager.default.removeItem(at: config) }
        let add = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "add", "--config-dir", config.path, bed["TB_BRIDGE_OBFS4"]])
        try #require(add.status == 0)
        let run = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "test", "--json", "--bootstrap", "--bootstrap-timeout", "60",
                                                                "--tor-options-file", bed["TB_CLIENT_TORRC"], "--config-dir", config.path])
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let bridge = try #require((report["bridges"] as? [[String: Any]])?.first)
        let bootstrap = try #require(bridge["bootstrap"] as? [String: Any])
        #expect(bootstrap["result"] as? String == "ok", "\(bridge)")
        #expect((bootstrap["milliseconds"] as? Double ?? 0) > 0)
    }
}
