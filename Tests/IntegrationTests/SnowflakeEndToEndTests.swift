import PosternTestSupport
import Foundation
import Testing

extension TestBedSuite {
    /// Under block-tor-and-bridges only the snowflake broker, STUN server and proxies stay
    /// reachable: `postern run` with the test bed's snowflake bridge goes through the in-process PT
    /// SOCKS listener, our broker rendezvous and WebRTC data channel to a real snowflake-proxy, the
    /// upstream snowflake server and its bridge, and fetches a page and the 4 MiB blob.
    ///
    /// The bound is generous: a snowflake-proxy 2.5.1 serves one rendezvous at a time and polls the
    /// broker every 5 s.
    @Test func posternRunThroughSnowflakeUnderBlockTorAndBridges() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let bridge = bed["TB_BRIDGE_SNOWFLAKE"]
        try #require(!bridge.isEmpty, "the test bed's snowflake stack is not up")
        try bed.setCensor("block-tor-and-bridges")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("snowflake-run")
        defer { try? FileManager.default.removeItem(at: config) }

        let started = ContinuousClock.now
        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "39131", "--transport", "snowflake",
                                      "--bridge", bridge, "--tor-options-file", bed["TB_CLIENT_TORRC"]])
        defer { run.terminate() }
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:39131", timeout: 120)
        try #require(ready != nil, "output: \(run.output)")
        #expect(ready?.contains("route: bridges") == true, "output: \(run.output)")
        // 2% (conn_done_pt) may share its moment with 1% and 10% now that SOCKS is granted at once.
        #expect(run.output.contains("Connecting to pluggable transport"), "tor used the PT listener")
        print("snowflake via postern run: ready in \(ContinuousClock.now - started)")

        let page = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:39131", timeout: 90)
        #expect(page.stdout.contains(bed["TB_HTTP_MARKER"]), "curl: \(page.stderr)")
        let blob = try await ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), ["-c",
            "curl -s --max-time 90 --socks5-hostname 127.0.0.1:39131 '\(bed["TB_BLOB_URL"])' | sha256sum"])
        #expect(blob.stdout.hasPrefix(bed["TB_BLOB_SHA256"]), "4 MiB through snowflake must arrive intact")
        #expect(run.interruptAndWait() == 0)

        let torLog = (try? String(contentsOf: config.appendingPathComponent("state/tor/tor.log"), encoding: .utf8)) ?? ""
        for secret in TestBed.bridgeSecrets(bridge) {
            #expect(!run.output.contains(secret), "bridge data in the output")
            #expect(!torLog.contains(secret), "bridge data in tor.log")
        }
    }

    /// A stock Debian tor uses Postern as its snowflake client through the managed-proxy interface
    /// (`ClientTransportPlugin snowflake exec postern pt-client`) and gets through
    /// block-tor-and-bridges.
    @Test func stockTorUsesPosternAsManagedSnowflakeClient() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let bridge = bed["TB_BRIDGE_SNOWFLAKE"]
        try #require(!bridge.isEmpty, "the test bed's snowflake stack is not up")
        try bed.setCensor("block-tor-and-bridges")
        defer { try? bed.setCensor("none") }
        let data = TestBed.temporaryDirectory("stock-tor-snowflake")
        defer { try? FileManager.default.removeItem(at: data) }
        let tor = try TestBed.StockTorClient(bed: bed, transport: "snowflake", bridge: bridge, socksPort: 39132,
                                             dataDirectory: data)
        defer { tor.stop() }

        let started = ContinuousClock.now
        let bootstrapped = try await tor.waitForBootstrap(timeout: .seconds(120))
        try #require(bootstrapped, "tor log:\n\(tor.log.suffix(3000))")
        print("stock tor via postern pt-client (snowflake): bootstrapped in \(ContinuousClock.now - started)")
        #expect(tor.launchedManagedProxy, "tor launched postern pt-client as a managed proxy")
        let page = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:39132", timeout: 90)
        #expect(page.stdout.contains(bed["TB_HTTP_MARKER"]), "curl: \(page.stderr)")
    }
}

extension TestBedSuite {
    /// The AMP-cache rendezvous as deployed (`url=` the broker, `ampcache=` the cache, `fronts=` a
    /// front for the cache), under block-tor-and-bridges: the poll goes as a GET through the test
    /// bed's AMP cache (HTTPS, fronted by its address, Host = the cache subdomain upstream's
    /// amp.CacheURL computes, which the cache checks), the armored answer comes back, and tor
    /// bootstraps and fetches a page over the WebRTC data channel.
    ///
    /// The broker's certificate (which also covers the cache) is trusted through SSL_CERT_FILE,
    /// OpenSSL's standard override of its default store: postern itself has no CA option.
    @Test func posternRunThroughSnowflakeAMPCacheUnderBlockTorAndBridges() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let bridge = bed["TB_BRIDGE_SNOWFLAKE_AMP"]
        try #require(bridge.contains("ampcache="), "the test bed's snowflake stack has no AMP cache")
        let cacheLog = URL(fileURLWithPath: bed.directory).appendingPathComponent("logs/snowflake-ampcache.out")
        func servedByCache() -> Int {
            ((try? String(contentsOf: cacheLog, encoding: .utf8)) ?? "").components(separatedBy: "\n")
                .filter { $0.contains(" served https://snowflake-broker.test/amp/client/") }.count
        }
        let servedBefore = servedByCache()
        try bed.setCensor("block-tor-and-bridges")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("snowflake-amp")
        defer { try? FileManager.default.removeItem(at: config) }

        let started = ContinuousClock.now
        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "39741", "--transport", "snowflake",
                                      "--bridge", bridge, "--tor-options-file", bed["TB_CLIENT_TORRC"]],
                                     environment: ["SSL_CERT_FILE": bed["TB_SNOWFLAKE_BROKER_CA"]])
        defer { run.terminate() }
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:39741", timeout: 120)
        try #require(ready != nil, "output: \(run.output)")
        #expect(ready?.contains("route: bridges") == true, "output: \(run.output)")
        print("snowflake via the AMP cache: ready in \(ContinuousClock.now - started)")

        let page = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:39741", timeout: 90)
        #expect(page.stdout.contains(bed["TB_HTTP_MARKER"]), "curl: \(page.stderr)")
        #expect(run.interruptAndWait() == 0)
        #expect(servedByCache() > servedBefore, "the rendezvous went through the AMP cache")

        let torLog = (try? String(contentsOf: config.appendingPathComponent("state/tor/tor.log"), encoding: .utf8)) ?? ""
        for secret in TestBed.bridgeSecrets(bridge) {
            #expect(!run.output.contains(secret), "bridge data in the output")
            #expect(!torLog.contains(secret), "bridge data in tor.log")
        }
    }
}
