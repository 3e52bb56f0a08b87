import Foundation
import Testing
@testable import PosternTor
@testable import PosternAppLayer
import PosternRuntime
import PosternTestSupport
import TransportWire

@Suite struct FailClosedQueueTests {
    @Test func capsAt200DroppingTheOldestAndLogsFirstAndEveryTenthDrop() {
        var queue = FailClosedQueue<Int>()
        var logged: [Int] = []
        for value in 1...235 {
            if queue.enqueue(value) != nil { logged.append(queue.droppedCount) }
        }
        #expect(queue.count == 200)
        #expect(queue.elements.first == 36 && queue.elements.last == 235)
        #expect(queue.droppedCount == 35)
        #expect(logged == [1, 11, 21, 31])
        #expect(queue.drain().count == 200)
        #expect(queue.isEmpty)
    }
}

@Suite struct NostrRelayPolicyTests {
    @Test func backoffDoublesFrom1sTo300sWithin20PercentJitter() {
        let bases = (1...12).map { NostrRelayManager.backoff(attempt: $0, jitter: 0) }
        #expect(bases == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300])
        #expect(NostrRelayManager.backoff(attempt: 3, jitter: 0.2) == 4.8)
        #expect(NostrRelayManager.backoff(attempt: 3, jitter: -0.2) == 3.2)
        for _ in 0..<200 {
            let value = NostrRelayManager.backoff(attempt: 20)
            #expect(value >= 240 && value <= 360)
        }
        #expect(NostrRelayManager.attemptsBeforeCooldown == 10 && NostrRelayManager.cooldown == 600)
    }

    @Test func unconnectedRelayQueuesSendsAndCapsPendingSubscriptions() async throws {
        // Preference on, tor never started: nothing connects, everything waits in memory.
        let activation = NetworkActivationService(store: nil, readiness: TorManager(), readinessWait: .seconds(60))
        let relay = "ws://127.0.0.1:8999"
        let manager = NostrRelayManager(activation: activation, relays: [relay])
        let keys = NostrKeyPair.generate()
        for index in 0..<205 {
            await manager.publish(try NostrEvent.signed(kind: 1, content: "\(index)", createdAt: 1_800_000_000, by: keys))
        }
        #expect(await manager.queuedCount(for: relay) == 200)
        for index in 0..<70 { await manager.subscribe(id: "sub-\(index)", filterJSON: "{}") }
        #expect(await manager.pendingSubscriptionCount(for: relay) == 64)
    }

    @Test func builtinRelaysAreBitchatsFour() {
        #expect(NostrRelayManager.builtinRelays == ["wss://relay.damus.io", "wss://nos.lol", "wss://relay.primal.net", "wss://offchain.pub"])
    }

    @Test func preferenceOffRoutesDirectAndOnNeverDoes() async throws {
        // A tor that was never started is never ready; one wait of 50 ms keeps the test short.
        let activation = NetworkActivationService(store: nil, readiness: TorManager(), readinessWait: .milliseconds(50))
        #expect(await activation.torPreference)
        #expect(await activation.routeWithoutWaiting() == nil)
        await #expect(throws: AppLayerError.self) { try await activation.routeWaitingForTor() }
        await activation.setActivationPermitted(false)
        #expect(await !activation.shouldRunTor)
        #expect(await activation.routeWithoutWaiting() == nil, "the policy stopping tor must not open the clear path")
        try await activation.setTorPreference(false)
        #expect(await activation.routeWithoutWaiting() == .direct)
        #expect(try await activation.routeWaitingForTor() == .direct)
    }
}

@Suite struct OnionGuardTests {
    @Test func onionDestinationsAreRefusedOnTheDirectRoute() async throws {
        let activation = NetworkActivationService(store: nil, readiness: TorManager())
        try await activation.setTorPreference(false)
        let onion = "wss://2gzyxa5ihm7nsggfxnu52rck2vv4rvmdlkiu3zzui5du4xyclen53wid.onion/"
        let error = try await #require(throws: AppLayerError.self) {
            try await WebSocketConnection.connect(to: URL(string: onion)!, route: .direct)
        }
        #expect(error.code == .onionNeedsTor)
        let httpError = try await #require(throws: AppLayerError.self) {
            try await ProxiedHTTPClient(activation: activation).get(URL(string: "http://example.onion./relays.csv")!, route: .direct)
        }
        #expect(httpError.code == .onionNeedsTor)
    }
}

@Suite struct NostrEventTests {
    @Test func idFollowsNIP01SerializationAndSignatureVerifies() throws {
        let keys = try NostrKeyPair(secretKeyHex: String(repeating: "01", count: 32))
        let event = try NostrEvent.signed(kind: 1, content: "line\nquote\" back\\slash tab\t é / 🙂", tags: [["t", "x"]],
                                          createdAt: 1_700_000_000, by: keys)
        let preimage = NostrEvent.idPreimage(pubkey: keys.publicKeyHex, createdAt: 1_700_000_000, kind: 1, tags: [["t", "x"]],
                                             content: "line\nquote\" back\\slash tab\t é / 🙂")
        #expect(preimage == "[0,\"\(keys.publicKeyHex)\",1700000000,1,[[\"t\",\"x\"]],\"line\\nquote\\\" back\\\\slash tab\\t é / 🙂\"]")
        #expect(event.isValid)
        let reparsed = try NostrEvent(json: event.json)
        #expect(reparsed == event && reparsed.isValid)
        let tampered = NostrEvent(id: event.id, pubkey: event.pubkey, createdAt: event.createdAt, kind: 1, tags: event.tags,
                                  content: "changed", sig: event.sig)
        #expect(!tampered.isValid)
    }

    @Test func giftWrapRoundTripAndImpersonationIsRejected() throws {
        let alice = NostrKeyPair.generate(), bob = NostrKeyPair.generate(), mallory = NostrKeyPair.generate()
        let now = 1_800_000_000
        let wrap = try NIP17.giftWrap(message: "meet at noon", from: alice, to: bob.publicKeyHex, now: now)
        #expect(wrap.kind == 1059 && wrap.tags == [["p", bob.publicKeyHex]] && wrap.isValid)
        #expect(wrap.pubkey != alice.publicKeyHex, "the wrap is signed by a one-time key")
        #expect(wrap.createdAt <= now && wrap.createdAt > now - 2 * 24 * 3600)
        let (sender, rumor) = try NIP17.unwrap(wrap, recipient: bob)
        #expect(sender == alice.publicKeyHex && rumor.content == "meet at noon" && rumor.kind == 14 && rumor.sig.isEmpty)
        #expect(throws: AppLayerError.self) { try NIP17.unwrap(wrap, recipient: mallory) }
    }
}

/// Hostile relay messages (issue 12): numbers no event has, nesting no parser should follow, and
/// garbage are dropped (nil), never a trap.
@Suite struct HostileNostrMessageTests {
    @Test(arguments: [
        #"["EVENT","s",{"id":"00","pubkey":"00","created_at":1e300,"kind":-1e300,"tags":[],"content":"x","sig":"00"}]"#,
        #"["EVENT","s",{"id":"00","pubkey":"00","created_at":18446744073709551616,"kind":1,"tags":[],"content":"x","sig":"00"}]"#,
        #"["EVENT","s",{"id":"00","pubkey":"00","created_at":1,"kind":1,"tags":[[1,2]],"content":"x","sig":"00"}]"#,
        #"["EVENT"]"#, #"["OK"]"#, #"["EOSE",7]"#, #"[]"#, #"{}"#, #"["EVENT",{{{"#, "\u{0}\u{1}",
    ])
    func malformedRelayMessagesAreDropped(_ text: String) {
        #expect(NostrRelayMessage(parsing: text, relay: "wss://relay.example") == nil)
    }

    /// 100,000 nested arrays: the JSON parser refuses the depth instead of recursing off the stack.
    @Test func deepNestingIsDropped() {
        #expect(NostrRelayMessage(parsing: String(repeating: "[", count: 100_000), relay: "wss://relay.example") == nil)
        #expect(NostrRelayMessage(parsing: "[\"EVENT\",\"s\"," + String(repeating: "{\"a\":", count: 50_000) + "1", relay: "wss://relay.example") == nil)
    }
}

/// What an inbox remembers to drop a wrap sent again: capped, least recently seen forgotten first.
@Suite struct InboxSeenIDsTests {
    @Test func seenIDsStayWithinTheCapForgettingTheLeastRecentlySeen() {
        var seen = SeenEventIDs(capacity: 8)
        let first = seen.insert("kept"), again = seen.insert("kept"), old = seen.insert("old")
        #expect(first && !again && old)
        var largestCount = 0, newIDsTakenAsSeen = 0, keptTakenAsNew = 0
        for index in 0..<1000 {
            if !seen.insert("id-\(index)") { newIDsTakenAsSeen += 1 }
            largestCount = max(largestCount, seen.count)
            // Seen again and again, "kept" stays among the most recent and is never taken as new.
            if index % 3 == 0, seen.insert("kept") { keptTakenAsNew += 1 }
        }
        #expect(largestCount <= 8)
        #expect(newIDsTakenAsSeen == 0 && keptTakenAsNew == 0)
        let oldAgain = seen.insert("old"), recentAgain = seen.insert("id-999")
        #expect(oldAgain, "not seen for 1000 ids: forgotten")
        #expect(!recentAgain)
    }

    /// A relay of ours sends a wrap, the same wrap again, `capacity` wraps for someone else, the
    /// first wrap again, `capacity` wraps for us, the first wrap once more and a last one. The
    /// duplicates are dropped while the id is remembered, and junk that does not open takes no
    /// place; after `capacity` real messages the first one's id is forgotten and it is yielded again
    /// (the old inbox kept every id it ever saw, and remembered junk first).
    @Test func anInboxDropsAWrapSentAgainAndForgetsIDsBeyondItsCap() async throws {
        let capacity = 8
        let alice = NostrKeyPair.generate(), bob = NostrKeyPair.generate(), carol = NostrKeyPair.generate()
        let hello = try NIP17.giftWrap(message: "hello", from: alice, to: bob.publicKeyHex)
        let last = try NIP17.giftWrap(message: "last", from: alice, to: bob.publicKeyHex)
        let forCarol = try (0..<capacity).map { try NIP17.giftWrap(message: "\($0)", from: alice, to: carol.publicKeyHex) }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("postern-replay-\(UUID()).txt")
        defer { try? FileManager.default.removeItem(at: file) }
        let forBob = try (0..<capacity).map { try NIP17.giftWrap(message: "\($0)", from: alice, to: bob.publicKeyHex) }
        // Wraps that do not open for bob (junk anyone can sign with bob's tag) take no place, so
        // hello is still known after them; bob's own messages do, and push hello out.
        let lines = ([hello, hello] + forCarol + [hello] + forBob + [hello, last]).map { "[\"EVENT\",\"postern-inbox\",\($0.json)]" }
        try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)

        let relay = try PeerProcess(script: "hostile_ws_peer.py", arguments: ["127.0.0.1", "0", "replay", file.path])
        defer { relay.stop() }
        let port = try await relay.port()
        let activation = NetworkActivationService(store: nil, readiness: TorManager())
        try await activation.setTorPreference(false)
        let manager = NostrRelayManager(activation: activation, relays: ["ws://127.0.0.1:\(port)"])
        let inbox = await manager.privateMessages(for: bob, subscription: "postern-inbox", rememberingAtMost: capacity)
        await manager.connect()
        let contents = try await withDeadline(.seconds(60), timedOut: { NostrTestTimeout() }) {
            var contents: [String] = []
            for await message in inbox {
                contents.append(message.content)
                if message.content == "last" { break }
            }
            return contents
        }
        await manager.disconnect()
        #expect(contents == ["hello"] + (0..<capacity).map { "\($0)" } + ["hello", "last"])
    }
}

/// The relay did not deliver every message within the test's deadline.
private struct NostrTestTimeout: Error {}
