import PosternTestSupport
import Foundation
import Testing

/// Issue #23's acceptance: under the bed's `shutdown` censor nothing leaves but DNS to the bed's
/// resolver (Debian's unbound on 198.51.100.53, over UDP, DoT and DoH), which is authoritative-by-stub
/// for the tunnel zone served by our dnstt stand-in (Tests/Support/dnstt-testbed, piped to the
/// vanilla bridge's ORPort). `postern run --transport auto` with a pasted dnstt line, and a stock
/// Debian tor with `ClientTransportPlugin dnstt exec postern pt-client`, bootstrap through it and
/// fetch the bed's page, over each of the three ways to the resolver. The bed's CA is trusted
/// through SSL_CERT_FILE, as for webtunnel.
extension TestBedSuite {
    /// The three bed lines: `doh=`, `dot=` and `udp=`.
    static let dnsttPaths = ["TB_BRIDGE_DNSTT_DOH", "TB_BRIDGE_DNSTT_DOT", "TB_BRIDGE_DNSTT_UDP"]

    private static func dnsttBridge(_ bed: TestBed, _ key: String) throws -> String {
        let bridge = bed[key]
        try #require(bridge.hasPrefix("dnstt "), "the test bed's dnstt stack is not up")
        return bridge
    }

    private static func expectNoDnsttSecrets(_ texts: [String], bridge: String) {
        // The server's public key and the tunnel domain are the line's secrets, with its fingerprint.
        var secrets = TestBed.bridgeSecrets(bridge)
        for word in bridge.split(separator: " ") where word.hasPrefix("pubkey=") || word.hasPrefix("domain=") {
            secrets.append(String(word.split(separator: "=", maxSplits: 1).last ?? ""))
        }
        for text in texts {
            for secret in secrets where !secret.isEmpty {
                #expect(!text.contains(secret), "bridge data in the output")
            }
        }
    }

    @Test(arguments: dnsttPaths)
    func posternRunWithAPastedDnsttLineGetsOutUnderShutdown(_ key: String) async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let bridge = try Self.dnsttBridge(bed, key)
        try bed.setCensor("shutdown")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("dnstt-run")
        defer { try? FileManager.default.removeItem(at: config) }
        let socks: UInt16 = 39871 + UInt16(Self.dnsttPaths.firstIndex(of: key) ?? 0)

        let started = ContinuousClock.now
        // Direct cannot get out: it is left after 8 s (6 without progress), as a user's would be
        // after its default window.
        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "\(socks)", "--transport", "auto",
                                      "--bridge", bridge, "--tor-options-file", bed["TB_CLIENT_TORRC"],
                                      "--route-timeout", "direct=8/6"],
                                     environment: ["SSL_CERT_FILE": bed["TB_DNSTT_CA"]])
        defer { run.terminate() }
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:\(socks)", timeout: 150)
        try #require(ready != nil, "output: \(run.output)")
        print("postern run --transport auto, dnstt (\(key)) under shutdown: ready in \(ContinuousClock.now - started)")
        #expect(ready?.contains("bridges (dnstt, command line)") == true, "ready via dnstt: \(ready ?? "")")
        #expect(run.output.contains("dnstt is tried last"), "the dnstt route's trying line says what it costs: \(run.output)")
        let page = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:\(socks)", timeout: 90)
        #expect(page.stdout.contains(bed["TB_HTTP_MARKER"]), "curl: \(page.stderr)")
        #expect(run.interruptAndWait() == 0)
        Self.expectNoDnsttSecrets([run.output], bridge: bridge)
    }

    @Test(arguments: dnsttPaths)
    func stockTorUsesPosternAsManagedDnsttClient(_ key: String) async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let bridge = try Self.dnsttBridge(bed, key)
        try bed.setCensor("shutdown")
        defer { try? bed.setCensor("none") }
        let data = TestBed.temporaryDirectory("stock-tor-dnstt")
        defer { try? FileManager.default.removeItem(at: data) }
        let socks: UInt16 = 39875 + UInt16(Self.dnsttPaths.firstIndex(of: key) ?? 0)
        let tor = try TestBed.StockTorClient(bed: bed, transport: "dnstt", bridge: bridge, socksPort: socks,
                                             dataDirectory: data, environment: ["SSL_CERT_FILE": bed["TB_DNSTT_CA"]])
        defer { tor.stop() }

        let started = ContinuousClock.now
        let bootstrapped = try await tor.waitForBootstrap(timeout: .seconds(120))
        try #require(bootstrapped, "tor log:\n\(tor.log.suffix(3000))")
        print("stock tor via postern pt-client (dnstt, \(key)) under shutdown: bootstrapped in \(ContinuousClock.now - started)")
        #expect(tor.launchedManagedProxy, "tor launched postern pt-client as a managed proxy")
        let page = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:\(socks)", timeout: 90)
        #expect(page.stdout.contains(bed["TB_HTTP_MARKER"]), "curl: \(page.stderr)")
    }
}
