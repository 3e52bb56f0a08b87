import PosternTestSupport
import Foundation
import Testing

extension TestBedSuite {
    /// Issue 13: the example app (Examples/EmbedNostr, its own package depending on Postern by
    /// path) builds with `swift build` in its own directory and, under block-tor, embeds a session
    /// with the pasted obfs4 bridge, waits for ready and sends a NIP-17 message to a relay reached
    /// only as the test bed's onion service; nostr-sdk opens it at the relay.
    @Test func embeddingExampleSendsThroughAPastedObfs4BridgeToAnOnionRelayUnderBlockTor() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let example = ProcessRunner.packageRoot.appendingPathComponent("Examples/EmbedNostr")
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = (environment["PATH"].map { $0 + ":" } ?? "") + "/opt/swift/usr/bin"
        // scripts/run-tests.sh builds it before the test bed starts; here it is up to date.
        let started = ContinuousClock.now
        let built = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["swift", "build", "--package-path", example.path],
                                          environment: environment)
        try #require(built.status == 0, "swift build: \(built.stdout.suffix(3000)) \(built.stderr.suffix(3000))")
        print("example package: swift build took \(ContinuousClock.now - started)")

        try bed.setCensor("block-tor")
        defer { try? bed.setCensor("none") }
        let state = TestBed.temporaryDirectory("embed-example")
        defer { try? FileManager.default.removeItem(at: state) }
        let relayPeer = try PeerProcess(script: "relay_peer.py", arguments: [bed["TB_ONION_TARGET_ADDR"], bed["TB_ONION_TARGET_PORT"],
                                                                             state.appendingPathComponent("relay").path])
        defer { relayPeer.stop() }
        _ = try await relayPeer.port()
        let bobKey = state.appendingPathComponent("bob.key").path
        let bobPublic = try await ProcessRunner.run(ProcessRunner.postern, ["nostr", "key", "--key-file", bobKey]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let bobSecret = try String(contentsOfFile: bobKey, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)

        let bridge = bed["TB_BRIDGE_OBFS4"]
        environment["EMBED_SOCKS_PORT"] = "39152"
        environment["EMBED_TOR_OPTIONS"] = bed["TB_CLIENT_TORRC"]
        environment["TMPDIR"] = state.path
        let sent = try await ProcessRunner.run(example.appendingPathComponent(".build/debug/EmbedNostr"),
                                         ["ws://\(bed["TB_ONION_HOST"])", bobPublic], environment: environment,
                                         stdin: "Bridge \(bridge)\nhello from an embedded session\n")
        #expect(sent.status == 0, "example: \(sent.stdout) \(sent.stderr)")
        #expect(sent.stdout.hasPrefix("sent "), "\(sent.stdout)")
        let opened = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"),
                                           ["python3", PeerProcess.peersDirectory.appendingPathComponent("nip17_peer.py").path, "read",
                                            "ws://\(bed["TB_ONION_TARGET_ADDR"]):\(bed["TB_ONION_TARGET_PORT"])", bobSecret, "20"])
        #expect(opened.stdout.contains("MESSAGE hello from an embedded session"), "nostr-sdk: \(opened.stdout) \(opened.stderr)")
        for secret in TestBed.bridgeSecrets(bridge) {
            #expect(!sent.stdout.contains(secret) && !sent.stderr.contains(secret), "bridge data in the example's output")
        }
    }
}
