import PosternTestSupport
import Foundation
import Testing
@testable import PosternTor

extension TestBedSuite {
    /// `postern nostr send|listen` as a user runs them: two processes, each with its own in-process
    /// tor on the test bed, a real relay behind the exit.
    @Test func nostrCommandSendsAndListensThroughTor() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("none")
        let state = TestBed.temporaryDirectory("nostr-cli")
        defer { try? FileManager.default.removeItem(at: state) }
        let relayPeer = try PeerProcess(script: "relay_peer.py", arguments: ["127.0.4.9", "8530", state.appendingPathComponent("relay").path])
        defer { relayPeer.stop() }
        _ = try await relayPeer.port()
        let postern = ProcessRunner.postern
        let common = ["--relay", "ws://127.0.4.9:8530", "--tor-options-file", bed["TB_CLIENT_TORRC"], "--timeout", "120"]
        let aliceKey = state.appendingPathComponent("alice.key").path, bobKey = state.appendingPathComponent("bob.key").path

        let bob = try await ProcessRunner.run(postern, ["nostr", "key", "--key-file", bobKey])
        #expect(bob.status == 0, "\(bob.stderr)")
        let bobPublic = bob.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(bobPublic.count == 64)
        let keyMode = try FileManager.default.attributesOfItem(atPath: bobKey)[.posixPermissions] as? Int
        #expect(keyMode == 0o600)
        let alicePublic = try await ProcessRunner.run(postern, ["nostr", "key", "--key-file", aliceKey]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)

        let listenArguments = ["nostr", "listen", "--count", "1", "--key-file", bobKey, "--socks", "39121",
                               "--config-dir", state.appendingPathComponent("bob").path] + common
        let listener = Task.detached { try await ProcessRunner.run(postern, listenArguments) }
        // The documented way: the message on standard input, never in argv.
        let sent = try await ProcessRunner.run(postern, ["nostr", "send", "--to", bobPublic, "--key-file", aliceKey, "--socks", "39122",
                                                   "--config-dir", state.appendingPathComponent("alice").path] + common + ["-"],
                                         stdin: "hello from the cli\n")
        #expect(sent.status == 0, "send: \(sent.stdout) \(sent.stderr)")
        #expect(!sent.stderr.contains("warning"), "\(sent.stderr)")
        #expect(sent.stdout.hasPrefix("sent "))
        let listened = try await listener.value
        #expect(listened.status == 0, "listen: \(listened.stdout) \(listened.stderr)")
        #expect(listened.stdout.contains("from \(alicePublic): hello from the cli"), "\(listened.stdout)")

        let usage = try await ProcessRunner.run(postern, ["nostr", "send", "--to", "nothex", "x"])
        #expect(usage.status == 64)
    }
}
