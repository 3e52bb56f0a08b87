import PosternTestSupport
import Foundation
import Testing

extension TestBedSuite {
    /// Issue 5: under block-tor, `postern run` with the test bed's obfs4 bridge (obfs4proxy on the
    /// server side, our Swift client on ours) bootstraps to 100% and fetches a page by name.
    @Test func postternRunThroughObfs4UnderBlockTor() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("block-tor")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("obfs4-run")
        defer { try? FileManager.default.removeItem(at: config) }

        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "39067", "--transport", "obfs4",
                                      "--bridge", bed["TB_BRIDGE_OBFS4"], "--tor-options-file", bed["TB_CLIENT_TORRC"]])
        defer { run.terminate() }
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:39067", timeout: 60)
        #expect(ready?.contains("route: bridges") == true, "output: \(run.output)")
        #expect(run.output.contains("Connected to pluggable transport"), "tor used the PT listener")

        let page = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:39067")
        #expect(page.stdout.contains(bed["TB_HTTP_MARKER"]), "curl: \(page.stderr)")
        let blob = try await ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), ["-c",
            "curl -s --max-time 60 --socks5-hostname 127.0.0.1:39067 '\(bed["TB_BLOB_URL"])' | sha256sum"])
        #expect(blob.stdout.hasPrefix(bed["TB_BLOB_SHA256"]), "4 MiB through obfs4 must arrive intact")
        #expect(run.interruptAndWait() == 0)
    }

    /// Issue 5: a stock Debian tor uses Postern as its obfs4 client through the managed-proxy
    /// interface (`ClientTransportPlugin obfs4 exec postern pt-client`) and gets through block-tor.
    @Test func stockTorUsesPosternAsManagedObfs4Client() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("block-tor")
        defer { try? bed.setCensor("none") }
        let data = TestBed.temporaryDirectory("stock-tor")
        defer { try? FileManager.default.removeItem(at: data) }
        let tor = try TestBed.StockTorClient(bed: bed, transport: "obfs4", bridge: bed["TB_BRIDGE_OBFS4"],
                                             socksPort: 39068, dataDirectory: data)
        defer { tor.stop() }

        let bootstrapped = try await tor.waitForBootstrap(timeout: .seconds(60))
        #expect(bootstrapped, "tor log:\n\(tor.log.suffix(3000))")
        // Under block-tor only the obfs4 bridge is reachable, so 100% means tor went through the
        // managed proxy.
        #expect(tor.launchedManagedProxy, "tor launched postern pt-client as a managed proxy")
        let page = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:39068")
        #expect(page.stdout.contains(bed["TB_HTTP_MARKER"]), "curl: \(page.stderr)")
    }
}

extension TestBedSuite {
    /// Secrets stay secret when things go wrong: with bridges blocked too, a run through the obfs4
    /// bridge stalls, and neither its output nor tor's log names the bridge.
    @Test func blockedBridgeRunNamesNoBridgeInOutputOrLog() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("block-tor-and-bridges")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("blocked-bridge")
        defer { try? FileManager.default.removeItem(at: config) }
        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "39069", "--stall-timeout", "8",
                                      "--bridge", bed["TB_BRIDGE_OBFS4"], "--tor-options-file", bed["TB_CLIENT_TORRC"]])
        defer { run.terminate() }
        let stalled = try await run.waitForLine(containing: "stalled:", timeout: 40)
        #expect(stalled != nil, "output: \(run.output)")
        #expect(run.interruptAndWait() == 0)
        let torLog = (try? String(contentsOf: config.appendingPathComponent("state/tor/tor.log"), encoding: .utf8)) ?? ""
        let secrets = TestBed.bridgeSecrets(bed["TB_BRIDGE_OBFS4"])
        #expect(secrets.count >= 4, "address, host, fingerprint and cert: \(secrets.count)")
        for secret in secrets {
            #expect(!run.output.contains(secret), "bridge data in the output")
            #expect(!torLog.contains(secret), "bridge data in tor.log")
        }
    }
}
