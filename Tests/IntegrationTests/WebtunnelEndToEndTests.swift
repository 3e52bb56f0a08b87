import PosternTestSupport
import Foundation
import Testing

/// webtunnel against the test bed's nginx (Debian's, certificate from the bed's CA) and our
/// webtunnel server stand-in, under `https-only`: only HTTPS to that web server gets out (Tor
/// nodes, bridges and snowflake are dropped). The bed's CA is trusted through SSL_CERT_FILE,
/// OpenSSL's standard override of its default store; postern has no CA option of its own.
extension TestBedSuite {
    private static func webtunnelBridge(_ bed: TestBed) throws -> String {
        let bridge = bed["TB_BRIDGE_WEBTUNNEL"]
        try #require(bridge.hasPrefix("webtunnel "), "the test bed's webtunnel stack is not up")
        return bridge
    }

    private static func caEnvironment(_ bed: TestBed) -> [String: String] { ["SSL_CERT_FILE": bed["TB_WEBTUNNEL_CA"]] }

    private static func expectNoSecrets(_ texts: [String], bridge: String) {
        // The url (secret path included) is the bridge's secret, and so are its fingerprint and address.
        let secrets = TestBed.bridgeSecrets(bridge) + [String(bridge.split(separator: "/").last ?? "")]
        for text in texts {
            for secret in secrets where !secret.isEmpty {
                #expect(!text.contains(secret), "bridge data in the output")
            }
        }
    }

    @Test func posternRunThroughWebtunnelUnderHTTPSOnly() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let bridge = try Self.webtunnelBridge(bed)
        try bed.setCensor("https-only")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("webtunnel-run")
        defer { try? FileManager.default.removeItem(at: config) }
        let accessLog = URL(fileURLWithPath: bed.directory).appendingPathComponent("logs/webtunnel-server.out")
        let upgradesBefore = ((try? String(contentsOf: accessLog, encoding: .utf8)) ?? "").components(separatedBy: "upgraded ").count

        let started = ContinuousClock.now
        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "39861", "--transport", "webtunnel",
                                      "--bridge", bridge, "--tor-options-file", bed["TB_CLIENT_TORRC"]],
                                     environment: Self.caEnvironment(bed))
        defer { run.terminate() }
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:39861", timeout: 90)
        try #require(ready != nil, "output: \(run.output)")
        #expect(ready?.contains("route: bridges") == true, "output: \(run.output)")
        print("webtunnel via postern run: ready in \(ContinuousClock.now - started)")

        let page = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:39861", timeout: 60)
        #expect(page.stdout.contains(bed["TB_HTTP_MARKER"]), "curl: \(page.stderr)")
        let blob = try await ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), ["-c",
            "curl -s --max-time 90 --socks5-hostname 127.0.0.1:39861 '\(bed["TB_BLOB_URL"])' | sha256sum"])
        #expect(blob.stdout.hasPrefix(bed["TB_BLOB_SHA256"]), "4 MiB through webtunnel must arrive intact")
        #expect(run.interruptAndWait() == 0)
        let upgradesAfter = ((try? String(contentsOf: accessLog, encoding: .utf8)) ?? "").components(separatedBy: "upgraded ").count
        #expect(upgradesAfter > upgradesBefore, "the tunnel went through nginx to our webtunnel server")

        let torLog = (try? String(contentsOf: config.appendingPathComponent("state/tor/tor.log"), encoding: .utf8)) ?? ""
        Self.expectNoSecrets([run.output, torLog], bridge: bridge)
    }

    /// Without the bed's CA the certificate does not verify, and nothing gets through: a
    /// verification that cannot fail would let this pass.
    @Test func webtunnelRefusesTheWebServerWithoutItsCA() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let bridge = try Self.webtunnelBridge(bed)
        try bed.setCensor("https-only")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("webtunnel-noca")
        defer { try? FileManager.default.removeItem(at: config) }
        let add = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "add", "--config-dir", config.path, bridge])
        #expect(add.status == 0, "bridges add: \(add.stderr)")
        // An empty trust store: nothing at all is trusted, the bed's CA included.
        let empty = config.appendingPathComponent("empty.pem")
        try "".write(to: empty, atomically: true, encoding: .utf8)
        let result = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "test", "--json", "--timeout", "5", "--config-dir", config.path],
                                           environment: ProcessInfo.processInfo.environment.merging(["SSL_CERT_FILE": empty.path, "SSL_CERT_DIR": config.path]) { $1 })
        #expect(result.status == 1, "a bridge whose certificate does not verify is dead: \(result.stdout)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let health = try #require((report["bridges"] as? [[String: Any]])?.first)
        #expect((health["tcp"] as? [String: Any])?["result"] as? String == "ok", "\(health)")
        #expect((health["tls"] as? [String: Any])?["result"] as? String == "failed", "\(health)")
        #expect(((health["tls"] as? [String: Any])?["detail"] as? String)?.contains("certificate verify failed") == true, "\(health)")
        #expect((health["upgrade"] as? [String: Any])?["result"] as? String == "skipped", "\(health)")
        Self.expectNoSecrets([result.stdout, result.stderr], bridge: bridge)
    }

    /// `postern bridges test`: TCP, TLS, upgrade and 101 for a good line; a wrong secret path gets
    /// nginx's cover page (200), which is reported as a refused upgrade, not as alive.
    @Test func bridgesTestReportsWebtunnelStages() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let bridge = try Self.webtunnelBridge(bed)
        try bed.setCensor("https-only")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("webtunnel-health")
        defer { try? FileManager.default.removeItem(at: config) }
        let wrongPath = bridge.replacingOccurrences(of: "/wt-", with: "/not-the-secret-")
            .replacingOccurrences(of: "[2001:db8:5e1c::1]", with: "[2001:db8:5e1c::2]")
        for line in [bridge, wrongPath] {
            let add = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "add", "--config-dir", config.path, line])
            #expect(add.status == 0, "bridges add: \(add.stderr)")
        }
        let result = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "test", "--json", "--timeout", "5", "--config-dir", config.path],
                                           environment: ProcessInfo.processInfo.environment.merging(Self.caEnvironment(bed)) { $1 })
        print("bridges test (webtunnel):\n\(result.stdout)")
        #expect(result.status == 1, "the wrong path is dead: \(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let results = try #require(report["bridges"] as? [[String: Any]])
        #expect(results.count == 2)
        let alive = results.filter { $0["alive"] as? Bool == true }
        let dead = results.filter { $0["alive"] as? Bool == false }
        try #require(alive.count == 1 && dead.count == 1, "\(results)")
        for key in ["tcp", "tls", "upgrade", "handshake"] {
            #expect((alive[0][key] as? [String: Any])?["result"] as? String == "ok", "\(key): \(alive[0])")
        }
        #expect(((alive[0]["upgrade"] as? [String: Any])?["detail"] as? String)?.contains("101 Switching Protocols") == true)
        #expect((dead[0]["tls"] as? [String: Any])?["result"] as? String == "ok")
        #expect((dead[0]["upgrade"] as? [String: Any])?["result"] as? String == "failed")
        #expect((dead[0]["reason"] as? String)?.contains("answered 200 instead of 101") == true, "\(dead[0])")
        Self.expectNoSecrets([result.stdout, result.stderr], bridge: bridge)
    }

    @Test func stockTorUsesPosternAsManagedWebtunnelClient() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let bridge = try Self.webtunnelBridge(bed)
        try bed.setCensor("https-only")
        defer { try? bed.setCensor("none") }
        let data = TestBed.temporaryDirectory("stock-tor-webtunnel")
        defer { try? FileManager.default.removeItem(at: data) }
        let tor = try TestBed.StockTorClient(bed: bed, transport: "webtunnel", bridge: bridge, socksPort: 39862,
                                             dataDirectory: data, environment: Self.caEnvironment(bed))
        defer { tor.stop() }

        let started = ContinuousClock.now
        let bootstrapped = try await tor.waitForBootstrap(timeout: .seconds(90))
        try #require(bootstrapped, "tor log:\n\(tor.log.suffix(3000))")
        print("stock tor via postern pt-client (webtunnel): bootstrapped in \(ContinuousClock.now - started)")
        #expect(tor.launchedManagedProxy, "tor launched postern pt-client as a managed proxy")
        let page = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:39862", timeout: 60)
        #expect(page.stdout.contains(bed["TB_HTTP_MARKER"]), "curl: \(page.stderr)")
    }

    /// Connection assist with the bed's obfs4 and snowflake bridges as built-ins and its webtunnel
    /// bridge stored: under https-only direct, obfs4 and snowflake stall and webtunnel connects.
    @Test func connectionAssistFindsWebtunnelUnderHTTPSOnly() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let bridge = try Self.webtunnelBridge(bed)
        try bed.setCensor("https-only")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("webtunnel-assist")
        defer { try? FileManager.default.removeItem(at: config) }
        let builtins = config.appendingPathComponent("builtin-bridges.txt")
        var builtinLines = [bed["TB_BRIDGE_OBFS4"]]
        if !bed["TB_BRIDGE_SNOWFLAKE"].isEmpty { builtinLines.append(bed["TB_BRIDGE_SNOWFLAKE"]) }
        try (builtinLines.joined(separator: "\n") + "\n").write(to: builtins, atomically: true, encoding: .utf8)
        let add = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "add", "--config-dir", config.path, bridge])
        #expect(add.status == 0, "bridges add: \(add.stderr)")

        let started = ContinuousClock.now
        let limits = ["direct=8/6", "obfs4=8/6", "snowflake=8/6"]
        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "39863", "--transport", "auto",
                                      "--builtin-bridges", builtins.path, "--tor-options-file", bed["TB_CLIENT_TORRC"]]
                                     + limits.flatMap { ["--route-timeout", $0] },
                                     environment: Self.caEnvironment(bed))
        defer { run.terminate() }
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:39863", timeout: 150)
        try #require(ready != nil, "output: \(run.output)")
        print("connection assist under https-only: ready in \(ContinuousClock.now - started)")
        #expect(ready?.contains("route: bridges (webtunnel, yours)") == true, "output: \(run.output)")
        let tried = run.output.split(separator: "\n").filter { $0.hasPrefix("trying ") }
        #expect(tried.first?.hasPrefix("trying direct") == true, "output: \(run.output)")
        #expect(tried.last?.hasPrefix("trying bridges (webtunnel, yours)") == true, "output: \(run.output)")
        #expect(tried.contains { $0.hasPrefix("trying bridges (obfs4, built-in)") }, "obfs4 was tried and left")
        let page = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:39863", timeout: 60)
        #expect(page.stdout.contains(bed["TB_HTTP_MARKER"]), "curl: \(page.stderr)")
        #expect(run.interruptAndWait() == 0)
        Self.expectNoSecrets([run.output], bridge: bridge)
    }
}
