import PosternTestSupport
import BridgeConfig
import Foundation
import PosternRuntime
import Testing
@testable import PosternTor
@testable import PosternAppLayer

/// A packet capture on the namespace's `lo` (dumpcap/tshark, Debian tshark) with a capture filter.
private final class Capture: @unchecked Sendable {
    private let dumpcap: Dumpcap
    var file: URL { dumpcap.file }

    init(filter: String, directory: URL) throws {
        dumpcap = try Dumpcap(capture: ["-i", "lo", "-f", filter], file: directory.appendingPathComponent("capture.pcapng"),
                              log: directory.appendingPathComponent("dumpcap.log"))
    }

    func waitUntilCapturing() async throws { try await dumpcap.waitUntilCapturing() }

    func stop() { dumpcap.stop() }

    struct Packet {
        let time: Double
        let source: String, destination: String
        let destinationPort: Int
    }

    func packets() throws -> [Packet] {
        let result = try ProcessRunner.runBlocking(URL(fileURLWithPath: "/usr/bin/tshark"),
                                           ["-r", file.path, "-T", "fields", "-E", "separator=,", "-e", "frame.time_epoch",
                                            "-e", "ip.src", "-e", "ip.dst", "-e", "tcp.dstport", "-e", "udp.dstport"])
        #expect(result.status == 0, "tshark: \(result.stderr)")
        return result.stdout.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 5, let time = Double(fields[0]) else { return nil }
            return Packet(time: time, source: fields[1], destination: fields[2], destinationPort: Int(fields[3]) ?? Int(fields[4]) ?? 0)
        }
    }
}

extension TestBedSuite {
    /// Fail-closed proof: Tor wanted and blocked by the censor (no bridges). The app layer queues
    /// Nostr sends and skips the directory fetch; the capture shows zero packets to the relay, the
    /// directory or any DNS server — only the tor core's own attempts at the network. Once the
    /// censor lifts, the queued events are delivered through Tor.
    @Test func failClosedSendsNothingWhileTorIsBlockedThenDeliversTheQueue() async throws {
        try await runLeakProof(proxyEnvironment: false)
    }

    /// The same proof with the environment trying to route around Tor (issue 12): NO_PROXY=*,
    /// no_proxy=*, and ALL_PROXY/all_proxy/http_proxy/HTTPS_PROXY naming a decoy proxy on
    /// loopback. Still 0 app-layer packets while blocked, 0 DNS, and the decoy is never contacted
    /// (neither a packet to its port in the capture nor a connection it accepted); afterwards the
    /// queue is delivered through Tor as before.
    @Test func failClosedHoldsWithNoProxyAndProxyVariablesInTheEnvironment() async throws {
        try await runLeakProof(proxyEnvironment: true)
    }

    private func runLeakProof(proxyEnvironment: Bool) async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("none")
        let state = TestBed.temporaryDirectory("applayer-leak")
        defer { try? FileManager.default.removeItem(at: state) }
        let relayPeer = try PeerProcess(script: "relay_peer.py", arguments: ["127.0.4.8", "8521", state.appendingPathComponent("relay").path])
        defer { relayPeer.stop() }
        try FileManager.default.createDirectory(at: state.appendingPathComponent("www"), withIntermediateDirectories: true)
        try "Relay URL,Latitude,Longitude\nrelay.example.org,1,2\n".write(to: state.appendingPathComponent("www/relays.csv"), atomically: true, encoding: .utf8)
        let httpPeer = try PeerProcess(script: "http_peer.py", arguments: ["127.0.4.8", "8522", state.appendingPathComponent("www").path])
        defer { httpPeer.stop() }
        _ = try await relayPeer.port()
        _ = try await httpPeer.port()
        // The decoy: an HTTP server that prints one line per request it gets (a proxy request is
        // a request too); it must print none.
        let decoyPeer = try PeerProcess(script: "http_peer.py", arguments: ["127.0.4.8", "8523", state.appendingPathComponent("www").path])
        defer { decoyPeer.stop() }
        _ = try await decoyPeer.port()
        if proxyEnvironment {
            // This test runs in a process of its own (scripts/run-tests.sh), so the variables
            // reach nothing else; they are set before any curl handle exists.
            let decoy = "http://127.0.4.8:8523"
            for (name, value) in ["NO_PROXY": "*", "no_proxy": "*", "ALL_PROXY": decoy, "all_proxy": decoy,
                                  "http_proxy": decoy, "HTTPS_PROXY": decoy, "https_proxy": decoy] {
                setenv(name, value, 1)
            }
        }
        defer {
            if proxyEnvironment {
                for name in ["NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy", "HTTPS_PROXY", "https_proxy"] { unsetenv(name) }
            }
        }

        // App-layer destinations: relay, directory, any DNS. (The censor drops the core's packets to the
        // tor network in the output hook, before `lo`, so those are counted from nftables instead.)
        let capture = try Capture(filter: "tcp port 8521 or tcp port 8522 or tcp port 8523 or port 53", directory: state)
        defer { capture.stop() }
        try await capture.waitUntilCapturing()
        try bed.setCensor("block-tor")
        let droppedBefore = try censorDropCount()

        let tor = TorManager()
        let socks = try SocksEndpoint(port: 39112)
        try await tor.start(TorConfiguration(dataDirectory: state.appendingPathComponent("tor"), socks: socks, options: try bed.clientOptions()))
        defer { Task { await tor.shutdown() } }
        // Preference on (stored default); each wait 40 s, so a connection gives up after 120 s.
        let activation = NetworkActivationService(store: try BridgeStore(directory: state.appendingPathComponent("config").path, rules: Transports.argumentRules),
                                                  readiness: tor, socks: socks, readinessWait: .seconds(40))
        #expect(await activation.torWanted)
        let http = ProxiedHTTPClient(activation: activation)
        let directory = GeoRelayDirectory(sourceURL: URL(string: "http://127.0.4.8:8522/relays.csv")!,
                                          cacheFile: state.appendingPathComponent("geo.csv"), http: http)
        let relayURL = "ws://127.0.4.8:8521"
        let manager = NostrRelayManager(activation: activation, relays: [relayURL])
        let (inbox, inboxTask) = startInbox(manager)
        defer { inboxTask.cancel() }
        await manager.connect()
        let keys = NostrKeyPair.generate()
        var events: [NostrEvent] = []
        for index in 1...3 {
            let event = try NostrEvent.signed(kind: 1, content: "queued while blocked #\(index)", by: keys)
            events.append(event)
            await manager.publish(event)
        }
        #expect(await manager.queuedCount(for: relayURL) == 3)
        #expect(await directory.refresh(force: true) == .skippedTorNotReady)
        // The directory's schedule and its "Tor became ready" trigger run from here on.
        await directory.start(torStatus: await tor.statusUpdates())

        try await Task.sleep(for: .seconds(12))
        #expect(await !tor.currentStatus.isReady, "the censor must keep tor from bootstrapping")
        #expect(await manager.state(of: relayURL) == .waitingForTor)
        #expect(await manager.queuedCount(for: relayURL) == 3)
        let coreAttempts = try censorDropCount() - droppedBefore
        #expect(coreAttempts > 0, "the tor core's own attempts must have met the censor")
        let unblockedAt = Date().timeIntervalSince1970
        try bed.setCensor("none")

        let readyAgain = await tor.awaitReady(timeout: .seconds(90))
        let statusAfterUnblock = await tor.currentStatus
        #expect(readyAgain, "\(statusAfterUnblock)")
        for event in events {
            let ok = await inbox.wait(timeout: 90) { if case .ok(event.id, true, _, _) = $0 { true } else { false } }
            #expect(ok != nil, "queued event \(event.content) was not delivered")
        }
        #expect(await manager.queuedCount(for: relayURL) == 0)
        // "Tor became ready" forced the directory fetch (its hourly schedule would not be due yet).
        var fetchedByReadiness = false
        for _ in 0..<300 where !fetchedByReadiness {
            fetchedByReadiness = await directory.lastSuccessfulFetch != nil
            try await Task.sleep(for: .milliseconds(100))
        }
        let hosts = await directory.relays.map(\.host)
        #expect(fetchedByReadiness && hosts == ["relay.example.org"])
        await directory.stop()
        await manager.disconnect()
        try await Task.sleep(for: .milliseconds(500))
        capture.stop()

        let packets = try capture.packets()
        let appLayerPorts: Set<Int> = [8521, 8522, 53]
        let blockedWindow = packets.filter { $0.time < unblockedAt }
        let leaks = blockedWindow.filter { appLayerPorts.contains($0.destinationPort) }
        #expect(leaks.isEmpty, "packets to the relay/directory/DNS while Tor was blocked: \(leaks.prefix(5).map { "\($0.source)->\($0.destination):\($0.destinationPort)" })")
        #expect(packets.filter { $0.destinationPort == 53 }.isEmpty, "no DNS at any time")
        #expect(packets.filter { $0.destinationPort == 8523 }.isEmpty, "a packet went to the decoy proxy")
        #expect(!decoyPeer.output.contains { $0.hasPrefix("REQUEST") }, "the decoy proxy got a request: \(decoyPeer.output)")
        let delivered = packets.filter { $0.time >= unblockedAt && $0.destinationPort == 8521 }
        #expect(!delivered.isEmpty, "after the censor lifts, the relay is reached (through the exit)")
        print("leak-proof\(proxyEnvironment ? " (NO_PROXY=*, proxy variables -> decoy)" : ""): \(coreAttempts) packets of the tor core dropped by the censor, \(leaks.count) app-layer packets captured while blocked; \(delivered.count) to the relay after unblock")
        await tor.shutdown()
    }
}

/// Packets the censor dropped so far (its `counter drop` rules). Only clients (not the network's
/// group) are dropped, and in this test the only client talking to the tor network is our core.
private func censorDropCount() throws -> Int {
    let result = try ProcessRunner.runBlocking(URL(fileURLWithPath: "/usr/sbin/nft"), ["list", "ruleset"])
    #expect(result.status == 0, "nft: \(result.stderr)")
    var total = 0
    for line in result.stdout.split(separator: "\n") where line.contains("drop") {
        let words = line.split(separator: " ")
        if let index = words.firstIndex(of: "packets"), index + 1 < words.count, let count = Int(words[index + 1]) { total += count }
    }
    return total
}
