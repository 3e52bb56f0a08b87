import PosternTestSupport
import BridgeConfig
import Foundation
import PosternRuntime
import Testing
@testable import PosternTor
@testable import PosternAppLayer

/// Collects relay messages for assertions (the manager's stream has one consumer).
actor RelayInbox {
    private(set) var messages: [NostrRelayMessage] = []
    func append(_ message: NostrRelayMessage) { messages.append(message) }

    func wait(timeout: Double, for predicate: @Sendable (NostrRelayMessage) -> Bool) async -> NostrRelayMessage? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let found = messages.first(where: predicate) { return found }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return nil
    }
}

func startInbox(_ manager: NostrRelayManager) -> (RelayInbox, Task<Void, Never>) {
    let inbox = RelayInbox()
    let task = Task { for await message in manager.messages { await inbox.append(message) } }
    return (inbox, task)
}

private func runPython(_ arguments: [String], stdin: String? = nil) throws -> ProcessResult {
    try ProcessRunner.runBlocking(URL(fileURLWithPath: "/usr/bin/env"),
                          ["python3", PeerProcess.peersDirectory.appendingPathComponent("nip17_peer.py").path] + arguments, stdin: stdin)
}

extension TestBedSuite {
    /// Postern's app layer through the in-process tor and the test bed's exits: HTTP, the geo
    /// directory's "preference on and ready" case, a real Nostr relay (PyPI nostr-relay) and NIP-17
    /// both ways with an independent implementation (PyPI nostr-sdk).
    @Test func appLayerInteropThroughTheTestBed() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("none")
        let state = TestBed.temporaryDirectory("applayer-interop")
        defer { try? FileManager.default.removeItem(at: state) }
        let relayPeer = try PeerProcess(script: "relay_peer.py", arguments: ["127.0.4.7", "8517", state.appendingPathComponent("relay").path])
        defer { relayPeer.stop() }
        let csv = "Relay URL,Latitude,Longitude\nrelay.example.org,48.85,2.35\nnostr.example.net,40.71,-74.0\n"
        try FileManager.default.createDirectory(at: state.appendingPathComponent("www"), withIntermediateDirectories: true)
        try csv.write(to: state.appendingPathComponent("www/relays.csv"), atomically: true, encoding: .utf8)
        let httpPeer = try PeerProcess(script: "http_peer.py", arguments: ["127.0.4.7", "8518", state.appendingPathComponent("www").path])
        defer { httpPeer.stop() }
        _ = try await httpPeer.port()
        _ = try await relayPeer.port()

        let tor = TorManager()
        let socks = try SocksEndpoint(port: 39110)
        try await tor.start(TorConfiguration(dataDirectory: state.appendingPathComponent("tor"), socks: socks, options: try bed.clientOptions()))
        defer { Task { await tor.shutdown() } }
        #expect(await tor.awaitReady(timeout: .seconds(90)))
        let activation = NetworkActivationService(store: try BridgeStore(directory: state.appendingPathComponent("config").path, rules: Transports.argumentRules),
                                                  readiness: tor, socks: socks)
        #expect(await activation.routeWithoutWaiting() == .tor(socks))

        // The proxied HTTP client reaches the test bed's page through an exit.
        let http = ProxiedHTTPClient(activation: activation)
        let page = try await http.get(URL(string: bed["TB_HTTP_URL"])!)
        #expect(page.status == 200 && String(decoding: page.body, as: UTF8.self).contains(bed["TB_HTTP_MARKER"]))

        // Geo directory, preference on and Tor ready: fetched through Tor.
        let directory = GeoRelayDirectory(sourceURL: URL(string: "http://127.0.4.7:8518/relays.csv")!,
                                          cacheFile: state.appendingPathComponent("geo.csv"), http: http)
        #expect(await directory.refresh(force: true) == .fetched(relayCount: 2))
        #expect(await directory.closestRelays(to: GeoCoordinate(latitude: 50, longitude: 8), count: 1).map(\.host) == ["relay.example.org"])

        // A real relay behind the exit: publish, OK, read back.
        let relayURL = "ws://127.0.4.7:8517"
        let manager = NostrRelayManager(activation: activation, relays: [relayURL])
        let (inbox, inboxTask) = startInbox(manager)
        defer { inboxTask.cancel() }
        await manager.connect()
        let alice = NostrKeyPair.generate()
        let note = try NostrEvent.signed(kind: 1, content: "hello from postern through tor", by: alice)
        await manager.publish(note)
        let ok = await inbox.wait(timeout: 60) { if case .ok(note.id, _, _, _) = $0 { true } else { false } }
        #expect(ok.map { if case .ok(_, true, _, _) = $0 { true } else { false } } == true, "OK: \(String(describing: ok))")
        await manager.subscribe(id: "readback", filterJSON: "{\"ids\":[\"\(note.id)\"]}")
        let readBack = await inbox.wait(timeout: 30) { if case .event("readback", note, _) = $0 { true } else { false } }
        #expect(readBack != nil)
        #expect(await inbox.wait(timeout: 30) { $0 == .endOfStoredEvents(subscription: "readback", relay: relayURL) } != nil)

        // A live subscription delivers new events until CLOSE; after CLOSE nothing more arrives.
        await manager.subscribe(id: "live", filterJSON: "{\"kinds\":[1],\"authors\":[\"\(alice.publicKeyHex)\"]}")
        #expect(await inbox.wait(timeout: 30) { $0 == .endOfStoredEvents(subscription: "live", relay: relayURL) } != nil)
        let second = try NostrEvent.signed(kind: 1, content: "live while subscribed", by: alice)
        await manager.publish(second)
        #expect(await inbox.wait(timeout: 30) { if case .event("live", second, _) = $0 { true } else { false } } != nil)
        await manager.unsubscribe(id: "live")
        let third = try NostrEvent.signed(kind: 1, content: "after CLOSE", by: alice)
        await manager.publish(third)
        #expect(await inbox.wait(timeout: 30) { if case .ok(third.id, true, _, _) = $0 { true } else { false } } != nil)
        try await Task.sleep(for: .seconds(2))
        #expect(await inbox.wait(timeout: 0.2) { if case .event("live", third, _) = $0 { true } else { false } } == nil,
                "an event arrived on a closed subscription")

        // NIP-17, Postern → nostr-sdk: wrap, publish, read back from the relay, the peer decrypts.
        let bob = NostrKeyPair.generate()
        let wrap = try NIP17.giftWrap(message: "postern to nostr-sdk ✓", from: alice, to: bob.publicKeyHex)
        await manager.publish(wrap)
        await manager.subscribe(id: "bob-inbox", filterJSON: "{\"kinds\":[1059],\"#p\":[\"\(bob.publicKeyHex)\"]}")
        let stored = await inbox.wait(timeout: 30) { if case .event("bob-inbox", wrap, _) = $0 { true } else { false } }
        #expect(stored != nil)
        let opened = try runPython(["unwrap", Hex.encode(bob.secretKey)], stdin: wrap.json)
        #expect(opened.status == 0, "nostr-sdk: \(opened.stderr)")
        #expect(opened.stdout.contains("SENDER \(alice.publicKeyHex)"))
        #expect(opened.stdout.contains("KIND 14"))
        #expect(opened.stdout.contains("MESSAGE postern to nostr-sdk ✓"))

        // nostr-sdk → Postern: the peer wraps, Postern publishes and reads it back, then opens it.
        let made = try runPython(["wrap", Hex.encode(bob.secretKey), alice.publicKeyHex, "nostr-sdk to postern ✓"])
        #expect(made.status == 0, "nostr-sdk: \(made.stderr)")
        let foreign = try NostrEvent(json: made.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        await manager.publish(foreign)
        await manager.subscribe(id: "alice-inbox", filterJSON: "{\"kinds\":[1059],\"#p\":[\"\(alice.publicKeyHex)\"]}")
        let arrived = await inbox.wait(timeout: 30) { if case .event("alice-inbox", foreign, _) = $0 { true } else { false } }
        #expect(arrived != nil)
        let (sender, rumor) = try NIP17.unwrap(foreign, recipient: alice)
        #expect(sender == bob.publicKeyHex && rumor.content == "nostr-sdk to postern ✓" && rumor.kind == 14)

        await manager.disconnect()
        await tor.shutdown()
    }
}

extension TestBedSuite {
    /// A Nostr relay reachable only as the test bed's v3 onion service: the in-process tor's onion
    /// client support makes a `.onion` custom relay actually work (publish, OK, read back).
    @Test func nostrRelayAsAnOnionService() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("none")
        let onionHost = bed["TB_ONION_HOST"]
        #expect(onionHost.hasSuffix(".onion") && onionHost.count == 62, "test bed env: \(onionHost)")
        let state = TestBed.temporaryDirectory("onion-relay")
        defer { try? FileManager.default.removeItem(at: state) }
        // The relay listens where the onion service forwards its port 80; the test dials only the
        // .onion name, so the connection goes client → rendezvous point → service.
        let relayPeer = try PeerProcess(script: "relay_peer.py", arguments: [bed["TB_ONION_TARGET_ADDR"], bed["TB_ONION_TARGET_PORT"],
                                                                             state.appendingPathComponent("relay").path])
        defer { relayPeer.stop() }
        _ = try await relayPeer.port()

        let tor = TorManager()
        let socks = try SocksEndpoint(port: 39072)
        try await tor.start(TorConfiguration(dataDirectory: state.appendingPathComponent("tor"), socks: socks, options: try bed.clientOptions()))
        defer { Task { await tor.shutdown() } }
        #expect(await tor.awaitReady(timeout: .seconds(90)))
        let activation = NetworkActivationService(store: try BridgeStore(directory: state.appendingPathComponent("config").path, rules: Transports.argumentRules),
                                                  readiness: tor, socks: socks)

        let relayURL = "ws://\(onionHost)"
        let manager = NostrRelayManager(activation: activation, relays: [relayURL])
        let (inbox, inboxTask) = startInbox(manager)
        defer { inboxTask.cancel() }
        let started = ContinuousClock.now
        await manager.connect()
        let author = NostrKeyPair.generate()
        let note = try NostrEvent.signed(kind: 1, content: "hello over an onion service", by: author)
        await manager.publish(note)
        // A fresh test bed publishes the service's descriptor about a minute after it starts; the
        // manager's reconnect backoff covers that wait.
        let ok = await inbox.wait(timeout: 150) { if case .ok(note.id, _, _, _) = $0 { true } else { false } }
        #expect(ok.map { if case .ok(_, true, _, _) = $0 { true } else { false } } == true, "OK: \(String(describing: ok))")
        print("onion relay: event accepted \(ContinuousClock.now - started) after connect")
        await manager.subscribe(id: "onion-readback", filterJSON: "{\"ids\":[\"\(note.id)\"]}")
        #expect(await inbox.wait(timeout: 30) { if case .event("onion-readback", note, _) = $0 { true } else { false } } != nil)
        #expect(await inbox.wait(timeout: 30) { $0 == .endOfStoredEvents(subscription: "onion-readback", relay: relayURL) } != nil)
        await manager.disconnect()
        await tor.shutdown()
    }
}
