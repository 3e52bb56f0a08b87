import PosternTestSupport
import Foundation
import Testing

/// Hostile peers against a real `postern run` (issue 12, item 3): an obfs4 "bridge" of ours
/// (hostile_obfs4_bridge.py) that accepts TCP and answers what no bridge would. The Postern process
/// stays up, the session with that bridge ends with a typed obfs4 error that names neither its
/// address nor its keys, the run's other bridge keeps working, the RSS stays under a generous
/// bound, and connection assist moves on from a route whose only bridge is the hostile one.
extension TestBedSuite {
    /// Peak RSS a run may reach here: tor's directory state plus Postern's caps (an obfs4 handshake
    /// holds at most 8 KiB + one 16 KiB read per dial; a frame decoder one frame plus one read).
    static let hostilePeerRSSBoundKiB = 400 * 1024

    private struct HostileBridge {
        let peer: PeerProcess
        let line: String
        let secrets: [String]

        /// A bridge line with a made-up fingerprint and cert (52 random bytes, the size of a real one).
        init(mode: String, host: String = "127.0.3.9") async throws {
            peer = try PeerProcess(script: "hostile_obfs4_bridge.py", arguments: [host, "0", mode])
            let port = try await peer.port()
            let fingerprint = (0..<20).map { _ in String(format: "%02X", UInt8.random(in: 0...255)) }.joined()
            let cert = Data((0..<52).map { _ in UInt8.random(in: 0...255) }).base64EncodedString().replacingOccurrences(of: "=", with: "")
            line = "obfs4 \(host):\(port) \(fingerprint) cert=\(cert) iat-mode=0"
            secrets = ["\(host):\(port)", fingerprint, cert]
        }
    }

    private static func expectAliveAndSmall(_ run: RunningPostern, sourceLocation: SourceLocation = #_sourceLocation) {
        let pid = run.processIdentifier
        #expect(ProcView.isAlive(pid), "the postern process died: \(run.output)", sourceLocation: sourceLocation)
        let peak = max(ProcView.statusKiB(pid, "VmHWM") ?? 0, ProcView.statusKiB(pid, "VmRSS") ?? 0)
        #expect(peak > 0 && peak < hostilePeerRSSBoundKiB, "peak RSS \(peak) KiB", sourceLocation: sourceLocation)
        print("hostile peer: postern \(pid) alive, peak RSS \(peak / 1024) MiB")
    }

    /// One run, two obfs4 bridges: the hostile one (each mode in turn) and the test bed's real one.
    @Test(arguments: [("random", "obfs4-server-mark-not-found"), ("max-padding", "obfs4-server-mark-not-found"),
                      ("junk-frames", "obfs4-server-mark-not-found")])
    func aHostileObfs4BridgeEndsItsSessionTypedWhileTheRealBridgeServes(_ mode: String, _ code: String) async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("none")
        let hostile = try await HostileBridge(mode: mode)
        defer { hostile.peer.stop() }
        let config = TestBed.temporaryDirectory("hostile-obfs4-\(mode)")
        defer { try? FileManager.default.removeItem(at: config) }
        let bridges = config.appendingPathComponent("run-bridges.txt")
        try "\(hostile.line)\n\(bed["TB_BRIDGE_OBFS4"])\n".write(to: bridges, atomically: true, encoding: .utf8)
        let socks: UInt16 = 39361
        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "\(socks)", "--transport", "obfs4",
                                      "--bridges-file", bridges.path, "--tor-options-file", bed["TB_CLIENT_TORRC"]])
        defer { run.terminate() }
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:\(socks)", timeout: 120)
        try #require(ready != nil, "output: \(run.output)")
        // tor dials every bridge: wait for the hostile one's typed error.
        let failure = try await run.waitForLine(containing: code, timeout: 90)
        #expect(failure != nil, "no \(code) for the hostile bridge; output: \(run.output)")
        #expect(hostile.peer.output.contains("CONNECTED"), "tor never dialled the hostile bridge")
        let page = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:\(socks)", timeout: 90)
        #expect(page.stdout.contains(bed["TB_HTTP_MARKER"]), "the real bridge stopped serving: \(page.stderr)")
        Self.expectAliveAndSmall(run)
        let output = run.output
        for secret in hostile.secrets + TestBed.bridgeSecrets(bed["TB_BRIDGE_OBFS4"]) {
            #expect(!output.contains(secret), "the output names a bridge (\(mode))")
        }
        #expect(run.interruptAndWait() == 0, "output: \(output)")
    }

    /// Connection assist under block-tor: "your" obfs4 bridge is the hostile one, the built-in obfs4
    /// bridge is the test bed's. With the sequential strategy tor really dials the hostile bridge:
    /// its sessions end typed, assist leaves the route and connects over the next. (The default race
    /// never applies it at all: its probe fails within milliseconds, as the full run showed.)
    @Test func connectionAssistMovesOnFromAHostileObfs4Bridge() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("block-tor")
        defer { try? bed.setCensor("none") }
        let hostile = try await HostileBridge(mode: "random")
        defer { hostile.peer.stop() }
        let config = TestBed.temporaryDirectory("hostile-obfs4-assist")
        defer { try? FileManager.default.removeItem(at: config) }
        let builtins = config.appendingPathComponent("builtin-bridges.txt")
        try "\(bed["TB_BRIDGE_OBFS4"])\n".write(to: builtins, atomically: true, encoding: .utf8)
        let add = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "add", "-", "--config-dir", config.path], stdin: hostile.line + "\n")
        #expect(add.status == 0, "bridges add: \(add.stdout) \(add.stderr)")
        let socks: UInt16 = 39362
        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "\(socks)", "--transport", "auto",
                                      "--assist-strategy", "sequential",
                                      "--builtin-bridges", builtins.path, "--tor-options-file", bed["TB_CLIENT_TORRC"],
                                      "--route-timeout", "direct=15/10", "--route-timeout", "obfs4=40/20"])
        defer { run.terminate() }
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:\(socks)", timeout: 180)
        try #require(ready != nil, "output: \(run.output)")
        let output = run.output
        let tried = output.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("trying "), let open = line.range(of: " (route ") else { return nil }
            return String(line[line.index(line.startIndex, offsetBy: 7)..<open.lowerBound])
        }
        #expect(tried.prefix(3) == ["direct", "bridges (obfs4, yours)", "bridges (obfs4, built-in)"], "output: \(output)")
        #expect(output.contains("obfs4-server-mark-not-found"), "the hostile bridge's session did not end typed: \(output)")
        #expect(output.contains("(route: bridges (obfs4, built-in),"), "output: \(output)")
        let page = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:\(socks)", timeout: 90)
        #expect(page.stdout.contains(bed["TB_HTTP_MARKER"]), "curl: \(page.stderr)")
        Self.expectAliveAndSmall(run)
        for secret in hostile.secrets + TestBed.bridgeSecrets(bed["TB_BRIDGE_OBFS4"]) {
            #expect(!output.contains(secret), "the output names a bridge")
        }
        #expect(run.interruptAndWait() == 0, "output: \(output)")
    }
}

/// A hostile Nostr relay of ours (hostile_ws_peer.py) next to a real relay, against a real
/// `postern nostr listen` through its own tor: the listener stays up, stays under the RSS bound,
/// reports the hostile relay's oversize message as a typed 1009 close, and still receives a
/// message sent through the good relay.
extension TestBedSuite {
    @Test(arguments: ["huge-event", "endless-events", "invalid-json"])
    func aHostileRelayDoesNotStopTheGoodOne(_ mode: String) async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("none")
        let state = TestBed.temporaryDirectory("hostile-relay-\(mode)")
        defer { try? FileManager.default.removeItem(at: state) }
        let hostile = try PeerProcess(script: "hostile_ws_peer.py", arguments: ["127.0.4.9", "8531", mode])
        defer { hostile.stop() }
        let good = try PeerProcess(script: "relay_peer.py", arguments: ["127.0.4.9", "8532", state.appendingPathComponent("relay").path])
        defer { good.stop() }
        _ = try await hostile.port()
        _ = try await good.port()
        let postern = ProcessRunner.postern
        let torOptions = ["--tor-options-file", bed["TB_CLIENT_TORRC"], "--timeout", "150"]
        let aliceKey = state.appendingPathComponent("alice.key").path, bobKey = state.appendingPathComponent("bob.key").path
        let bobPublic = try await ProcessRunner.run(postern, ["nostr", "key", "--key-file", bobKey]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        _ = try await ProcessRunner.run(postern, ["nostr", "key", "--key-file", aliceKey])

        let listener = try RunningPostern(["nostr", "listen", "--count", "1", "--key-file", bobKey, "--socks", "39363",
                                           "--config-dir", state.appendingPathComponent("bob").path,
                                           "--relay", "ws://127.0.4.9:8531", "--relay", "ws://127.0.4.9:8532"] + torOptions)
        defer { listener.terminate() }
        _ = try await listener.waitForLine(containing: "listening as", timeout: 30)
        // Let the hostile relay do its worst for a while before the good message comes.
        _ = try await hostile.waitForLine(prefix: "CONNECTED", timeout: 90)
        try await Task.sleep(for: .seconds(5))
        // Still waiting for its one message: alive, and its peak so far is what the hostile relay cost.
        let pid = listener.processIdentifier
        #expect(listener.isRunning, "the listener died (\(mode)): \(listener.output.suffix(2000))")
        let peak = ProcView.statusKiB(pid, "VmHWM") ?? 0
        #expect(peak > 0 && peak < Self.hostilePeerRSSBoundKiB, "peak RSS \(peak) KiB")
        print("hostile relay (\(mode)): listener \(pid) alive, peak RSS \(peak / 1024) MiB")
        let sent = try await ProcessRunner.run(postern, ["nostr", "send", "--to", bobPublic, "--key-file", aliceKey, "--socks", "39364",
                                                   "--config-dir", state.appendingPathComponent("alice").path,
                                                   "--relay", "ws://127.0.4.9:8532", "-"] + torOptions, stdin: "through the good relay\n")
        #expect(sent.status == 0, "send: \(sent.stdout) \(sent.stderr)")
        let received = try await listener.waitForLine(containing: "through the good relay", timeout: 90)
        #expect(received != nil, "the listener never got the good relay's message (\(mode)): \(listener.output.suffix(2000))")
        if mode == "huge-event" {
            #expect(listener.output.contains("1009"), "the oversize event did not end its connection with 1009: \(listener.output.suffix(2000))")
        }
        // --count 1: the listener ends by itself once the message is printed.
        for _ in 0..<100 where listener.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        #expect(!listener.isRunning || received == nil)
    }
}
