import PosternTestSupport
import Foundation
import Testing

/// Opens the stored gift wraps to a key with the independent reader (nostr-sdk, and a plain
/// websockets client to the relay).
private func readWithNostrSDK(relay: String, secretHex: String) throws -> ProcessResult {
    try ProcessRunner.runBlocking(URL(fileURLWithPath: "/usr/bin/env"),
                          ["python3", PeerProcess.peersDirectory.appendingPathComponent("nip17_peer.py").path, "read", relay, secretHex, "20"])
}

/// Two keys made with `postern nostr key`: alice sends, bob's secret opens with nostr-sdk.
private func makeKeys(in state: URL) throws -> (alice: String, alicePublic: String, bobPublic: String, bobSecret: String) {
    let alice = state.appendingPathComponent("alice.key").path, bob = state.appendingPathComponent("bob.key").path
    let alicePublic = try ProcessRunner.runBlocking(ProcessRunner.postern, ["nostr", "key", "--key-file", alice]).stdout
    let bobPublic = try ProcessRunner.runBlocking(ProcessRunner.postern, ["nostr", "key", "--key-file", bob]).stdout
    let bobSecret = try String(contentsOfFile: bob, encoding: .utf8)
    return (alice, alicePublic.trimmingCharacters(in: .whitespacesAndNewlines), bobPublic.trimmingCharacters(in: .whitespacesAndNewlines),
            bobSecret.trimmingCharacters(in: .whitespacesAndNewlines))
}

extension TestBedSuite {
    /// Issue 13: `postern nostr send` goes through the stored bridges and transport. Under
    /// block-tor-and-bridges, with only the stored snowflake bridge (transport snowflake, no
    /// built-ins on the private network), its own session rides a real snowflake-proxy to the
    /// bridge, the gift wrap reaches a real relay behind the exit, and nostr-sdk opens it there.
    @Test func nostrSendRidesTheStoredSnowflakeBridgeUnderBlockTorAndBridges() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let bridge = bed["TB_BRIDGE_SNOWFLAKE"]
        try #require(!bridge.isEmpty, "the test bed's snowflake stack is not up")
        try bed.setCensor("block-tor-and-bridges")
        defer { try? bed.setCensor("none") }
        let state = TestBed.temporaryDirectory("nostr-snowflake")
        defer { try? FileManager.default.removeItem(at: state) }
        let relayPeer = try PeerProcess(script: "relay_peer.py", arguments: ["127.0.4.11", "8533", state.appendingPathComponent("relay").path])
        defer { relayPeer.stop() }
        _ = try await relayPeer.port()
        let config = state.appendingPathComponent("config").path
        let postern = ProcessRunner.postern
        let added = try await ProcessRunner.run(postern, ["bridges", "add", "-", "--config-dir", config], stdin: bridge + "\n")
        #expect(added.status == 0, "\(added.stderr)")
        let chosen = try await ProcessRunner.run(postern, ["transport", "use", "snowflake", "--config-dir", config])
        #expect(chosen.status == 0, "\(chosen.stderr)")
        let keys = try makeKeys(in: state)

        let started = ContinuousClock.now
        let sent = try await ProcessRunner.run(postern, ["nostr", "send", "--to", keys.bobPublic, "--key-file", keys.alice, "--config-dir", config,
                                                   "--relay", "ws://127.0.4.11:8533", "--socks", "39150",
                                                   "--tor-options-file", bed["TB_CLIENT_TORRC"], "--timeout", "240", "-"],
                                         stdin: "through snowflake\n")
        print("postern nostr send via the stored snowflake bridge: \(ContinuousClock.now - started)")
        #expect(sent.status == 0, "send: \(sent.stdout) \(sent.stderr)")
        #expect(sent.stderr.contains("postern nostr: tor ready (route: bridges (snowflake)"), "\(sent.stderr)")
        #expect(!sent.stderr.contains("using the tor of the running"))
        let opened = try readWithNostrSDK(relay: "ws://127.0.4.11:8533", secretHex: keys.bobSecret)
        #expect(opened.status == 0, "nostr-sdk: \(opened.stdout) \(opened.stderr)")
        #expect(opened.stdout.contains("SENDER \(keys.alicePublic)"), "\(opened.stdout)")
        #expect(opened.stdout.contains("MESSAGE through snowflake"), "\(opened.stdout)")
        for secret in TestBed.bridgeSecrets(bridge) {
            #expect(!sent.stdout.contains(secret) && !sent.stderr.contains(secret), "bridge data in the output")
        }
    }

    /// Issue 13: with a `postern run` up, `postern nostr` and `postern geo` ride its SOCKS port
    /// (named in its status file) and start no tor of their own: no data directory of their own
    /// appears, and the message and the directory still arrive.
    @Test func nostrAndGeoAttachToARunningPosternRun() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("none")
        let state = TestBed.temporaryDirectory("nostr-attach")
        defer { try? FileManager.default.removeItem(at: state) }
        let relayPeer = try PeerProcess(script: "relay_peer.py", arguments: ["127.0.4.11", "8534", state.appendingPathComponent("relay").path])
        defer { relayPeer.stop() }
        let csv = "Relay URL,Latitude,Longitude\nrelay.example.org,48.85,2.35\nnostr.example.net,40.71,-74.0\n"
        try FileManager.default.createDirectory(at: state.appendingPathComponent("www"), withIntermediateDirectories: true)
        try csv.write(to: state.appendingPathComponent("www/relays.csv"), atomically: true, encoding: .utf8)
        let httpPeer = try PeerProcess(script: "http_peer.py", arguments: ["127.0.4.11", "8535", state.appendingPathComponent("www").path])
        defer { httpPeer.stop() }
        _ = try await relayPeer.port()
        _ = try await httpPeer.port()
        let config = state.appendingPathComponent("config")
        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "39151", "--transport", "direct",
                                      "--tor-options-file", bed["TB_CLIENT_TORRC"]])
        defer { run.terminate() }
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:39151", timeout: 120)
        try #require(ready != nil, "output: \(run.output)")
        // SIGHUP asks the run to check its settings now; it keeps running (twice: the second one too).
        kill(run.processIdentifier, SIGHUP)
        try await Task.sleep(for: .milliseconds(600))
        kill(run.processIdentifier, SIGHUP)
        try await Task.sleep(for: .milliseconds(600))
        #expect(run.isRunning, "output: \(run.output)")
        let keys = try makeKeys(in: state)
        let postern = ProcessRunner.postern

        // No --tor-options-file: a tor of its own could not even bootstrap on the private network.
        let sent = try await ProcessRunner.run(postern, ["nostr", "send", "--to", keys.bobPublic, "--key-file", keys.alice,
                                                   "--config-dir", config.path, "--relay", "ws://127.0.4.11:8534", "--timeout", "90", "-"],
                                         stdin: "through the running tor\n")
        #expect(sent.status == 0, "send: \(sent.stdout) \(sent.stderr)")
        #expect(sent.stderr.contains("using the tor of the running 'postern run' (pid \(run.processIdentifier)) at socks5 127.0.0.1:39151"),
                "\(sent.stderr)")
        #expect(!sent.stderr.contains("tor ready (route:"), "a second tor started: \(sent.stderr)")
        let stateDirectory = config.appendingPathComponent("state")
        #expect(!FileManager.default.fileExists(atPath: stateDirectory.appendingPathComponent("tor-nostr").path), "a second tor's data directory")
        let opened = try readWithNostrSDK(relay: "ws://127.0.4.11:8534", secretHex: keys.bobSecret)
        #expect(opened.stdout.contains("MESSAGE through the running tor"), "\(opened.stdout) \(opened.stderr)")

        let refreshed = try await ProcessRunner.run(postern, ["geo", "refresh", "--url", "http://127.0.4.11:8535/relays.csv", "--json",
                                                        "--config-dir", config.path])
        #expect(refreshed.status == 0, "geo: \(refreshed.stdout) \(refreshed.stderr)")
        #expect(refreshed.stdout.contains(#""outcome":"fetched","relays":2"#), "\(refreshed.stdout)")
        #expect(refreshed.stderr.contains("using the tor of the running 'postern run'"), "\(refreshed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: stateDirectory.appendingPathComponent("tor-geo").path), "a second tor's data directory")
        let again = try await ProcessRunner.run(postern, ["geo", "refresh", "--url", "http://127.0.4.11:8535/relays.csv", "--config-dir", config.path])
        #expect(again.stdout.contains("not due"), "\(again.stdout) \(again.stderr)")
        let closest = try await ProcessRunner.run(postern, ["geo", "show", "--near", "48.0,2.0", "--count", "1", "--config-dir", config.path])
        #expect(closest.status == 0 && closest.stdout.contains("wss://relay.example.org") && !closest.stdout.contains("nostr.example.net"),
                "\(closest.stdout) \(closest.stderr)")
        #expect(run.interruptAndWait() == 0)
    }
}
