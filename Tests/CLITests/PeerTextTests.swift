import PosternTestSupport
import Foundation
import Testing

/// Text from outside reaches the terminal with its control characters made visible (issue 24,
/// item 5): `postern` run as a user runs it against peers on loopback that put escape sequences
/// (a window title, a screen clear, a C1 CSI, a right-to-left override) in what they send. A real
/// Nostr relay carries the message; our hostile relay refuses with them and answers the WebSocket
/// upgrade with them; a directory serves them in its CSV; a paste carries them in a plugin line.
/// The Tor preference is off in each sandbox, so the peers are reached directly on loopback.
@Suite struct PeerTextTests {
    typealias Sandbox = SettingsCommandTests.Sandbox

    /// What the peers send (hostile_ws_peer.py's ESCAPES): OSC 0, CSI 2J, a C1 CSI, RLO.
    static let escapes = "\u{1B}]0;pwned\u{07}\u{1B}[2J\u{9B}31m\u{202E}"
    /// The same, as `PlainText.visible` shows it.
    static let shown = #"\u{1B}]0;pwned\u{7}\u{1B}[2J\u{9B}31m\u{202E}"#

    /// No scalar that steers a terminal (C0 but the line ends of the output itself, DEL, C1) or
    /// reorders text.
    static func expectNothingRaw(_ output: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let raw = output.unicodeScalars.filter { scalar in
            scalar != "\n" && ((0x00...0x1F).contains(scalar.value) || (0x7F...0x9F).contains(scalar.value) || scalar == "\u{202E}")
        }
        #expect(raw.isEmpty, "raw control characters \(raw.map { String($0.value, radix: 16) }) in: \(output.debugDescription)",
                sourceLocation: sourceLocation)
    }

    private func sandboxWithTorOff() async throws -> Sandbox {
        let sandbox = Sandbox()
        let off = try await sandbox.run("tor", "off")
        #expect(off.status == 0, "\(off.stderr)")
        return sandbox
    }

    /// A message from a real relay (nostr-relay) printed by `nostr listen`: its escapes and its
    /// newline (which would start a forged "from" line) are shown, on the message's one line.
    @Test func aMessageFromARelayIsPrintedWithItsControlCharactersVisible() async throws {
        let sandbox = try await sandboxWithTorOff()
        let state = sandbox.directory.appendingPathComponent("peer")
        let relayPeer = try PeerProcess(script: "relay_peer.py", arguments: ["127.0.4.31", "8561", state.appendingPathComponent("relay").path])
        defer { relayPeer.stop() }
        _ = try await relayPeer.waitForLine(prefix: "PORT ", timeout: 120)
        let relay = ["--relay", "ws://127.0.4.31:8561", "--timeout", "120"]
        let aliceKey = state.appendingPathComponent("alice.key").path, bobKey = state.appendingPathComponent("bob.key").path
        let alice = try await sandbox.run("nostr", "key", "--key-file", aliceKey).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let bob = try await sandbox.run("nostr", "key", "--key-file", bobKey).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let forged = "hi \(Self.escapes)\nfrom \(String(repeating: "0", count: 64)): forged"
        let sent = try await sandbox.run(["nostr", "send", "--to", bob, "--key-file", aliceKey, "-"] + relay, stdin: forged + "\n")
        #expect(sent.status == 0, "send: \(sent.stdout) \(sent.stderr)")
        // The relay keeps the wrap, so the listener gets it whenever it subscribes.
        let listened = try await sandbox.run(["nostr", "listen", "--count", "1", "--key-file", bobKey] + relay)
        #expect(listened.status == 0, "listen: \(listened.stdout) \(listened.stderr)")
        #expect(listened.stdout.contains(#"from \#(alice): hi \#(Self.shown)\nfrom 0000"#), "\(listened.stdout.debugDescription)")
        #expect(listened.stdout.split(separator: "\n").count == 2, "the message spans lines: \(listened.stdout.debugDescription)")
        Self.expectNothingRaw(listened.stdout + listened.stderr)
    }

    /// A relay's refusal (an OK false) and its WebSocket status line, as `nostr send` reports them
    /// on stderr.
    @Test(arguments: ["escape-refusal", "escape-status"])
    func aRelaysRefusalIsPrintedWithItsControlCharactersVisible(_ mode: String) async throws {
        let sandbox = try await sandboxWithTorOff()
        let hostile = try PeerProcess(script: "hostile_ws_peer.py", arguments: ["127.0.0.1", "0", mode])
        defer { hostile.stop() }
        let port = try await hostile.port()
        let key = sandbox.directory.appendingPathComponent("alice.key").path
        let bob = try await sandbox.run("nostr", "key", "--key-file", sandbox.directory.appendingPathComponent("bob.key").path).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        // No relay ever accepts: the command ends at its own --timeout, having reported each refusal.
        let sent = try await sandbox.run(["nostr", "send", "--to", bob, "--key-file", key, "--relay", "ws://127.0.0.1:\(port)",
                                    "--timeout", "15", "-"], stdin: "hello\n")
        #expect(sent.status == 1, "\(sent.stdout) \(sent.stderr)")
        let reported = mode == "escape-refusal" ? "refused: blocked: \(Self.shown)" : "WebSocket handshake refused: HTTP/1.1 403 \(Self.shown)"
        #expect(sent.stderr.contains(reported), "\(sent.stderr.debugDescription)")
        Self.expectNothingRaw(sent.stdout + sent.stderr)
    }

    /// A directory whose CSV has escapes in its header: the rejection quotes the header, visibly.
    @Test func aDirectorysRejectedFieldIsPrintedWithItsControlCharactersVisible() async throws {
        let sandbox = try await sandboxWithTorOff()
        let www = sandbox.directory.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        try Data("Relay URL\(Self.escapes),Latitude,Longitude\nrelay.example.org,48.85,2.35\n".utf8)
            .write(to: www.appendingPathComponent("relays.csv"))
        let httpPeer = try PeerProcess(script: "http_peer.py", arguments: ["127.0.0.1", "0", www.path])
        defer { httpPeer.stop() }
        let port = try await httpPeer.port()
        let refreshed = try await sandbox.run("geo", "refresh", "--url", "http://127.0.0.1:\(port)/relays.csv")
        #expect(refreshed.status == 1, "\(refreshed.stdout) \(refreshed.stderr)")
        #expect(refreshed.stderr.contains("found 'Relay URL\(Self.shown),Latitude,Longitude'"), "\(refreshed.stderr.debugDescription)")
        Self.expectNothingRaw(refreshed.stdout + refreshed.stderr)
    }

    /// A pasted plugin line with escapes in its path or an argument is not offered (the offer
    /// would print them inside the command to run); the note says why without echoing them.
    @Test func aPastedPluginWithControlCharactersIsNotOffered() async throws {
        let sandbox = Sandbox()
        let paste = """
        ClientTransportPlugin obfs4 exec /usr/bin/obfs4proxy\(Self.escapes)
        ClientTransportPlugin meek_lite exec /usr/bin/obfs4proxy -log\(Self.escapes)
        \(SettingsCommandTests.line1)
        """
        for extra in [[], ["--accept-plugins"]] {
            let added = try await sandbox.run(["bridges", "add", "-", "--dry-run"] + extra, stdin: paste)
            #expect(added.status == 0, "\(added.stdout) \(added.stderr)")
            #expect(added.stdout.contains("line 1: note: ClientTransportPlugin is ignored: the plugin's path"), "\(added.stdout.debugDescription)")
            #expect(added.stdout.contains("line 2: note: ClientTransportPlugin is ignored: plugin argument 1"), "\(added.stdout.debugDescription)")
            Self.expectNothingRaw(added.stdout + added.stderr)
        }
        let typed = try await sandbox.run("transport", "plugin", "add", "obfs4", "/usr/bin/obfs4proxy\(Self.escapes)")
        #expect(typed.status == 64, "\(typed.stderr)")
        Self.expectNothingRaw(typed.stdout + typed.stderr)
    }
}
