import BridgeConfig
import Foundation
import PosternRuntime
import PosternTestSupport
import Testing
@testable import PosternTor
@testable import PosternAppLayer

/// `postern geo` without the CLI: --near's parser, the relay table, each refresh outcome's text and
/// JSON, the refresh through an activation with its readiness deadline.
@Suite struct GeoTextTests {
    @Test func coordinatesParseWithinTheirRanges() {
        #expect(GeoCoordinate(parsing: "48.85,2.35") == GeoCoordinate(latitude: 48.85, longitude: 2.35))
        #expect(GeoCoordinate(parsing: " -90 , 180 ") == GeoCoordinate(latitude: -90, longitude: 180))
        for bad in ["", "48.85", "48.85,2.35,1", "91,0", "0,-180.5", "north,east", "48.85;2.35"] {
            #expect(GeoCoordinate(parsing: bad) == nil, "'\(bad)'")
        }
    }

    @Test func relaysAsATableAndAsJSON() throws {
        let relays = try GeoRelayCSV.parse(Data("Relay URL,Latitude,Longitude\nrelay.example.org,48.85,2.35\nwss://far.example.net,-33.5,151.0\n".utf8))
        #expect(GeoRelayListing.table(relays) == """
            RELAY                    LATITUDE  LONGITUDE
            wss://relay.example.org  48.85     2.35
            wss://far.example.net    -33.5     151.0
            """)
        #expect(relays.map(GeoRelayListing.init).map(\.url) == ["wss://relay.example.org", "wss://far.example.net"])
    }

    @Test func eachOutcomeHasItsSentenceAndJSON() {
        func report(_ outcome: GeoRefreshOutcome?) -> GeoRefreshReport {
            GeoRefreshReport(outcome: outcome, relays: 7, readinessTimeout: .seconds(120))
        }
        #expect(report(.fetched(relayCount: 2)).text == "fetched 2 relays")
        #expect(report(.fetched(relayCount: 2)).jsonLine == #"{"outcome":"fetched","relays":2}"#)
        #expect(report(.notDue).text == "not due: the cache (7 relays) is less than 24 h old; --force fetches anyway")
        #expect(report(.notDue).jsonLine == #"{"outcome":"not-due","relays":7}"#)
        #expect(report(.fetched(relayCount: 2)).succeeded && report(.notDue).succeeded)
        #expect(report(nil).text == "tor was not ready within 120 s; nothing was fetched, the cache is unchanged")
        #expect(report(.skippedTorNotReady).text == "tor is wanted and not ready: nothing was fetched, the cache is unchanged")
        #expect(report(.failed(AppLayerError(.httpStatus, "directory answered HTTP 404"))).text
                == "fetch failed: directory answered HTTP 404; the cache is unchanged")
        let until = Date(timeIntervalSince1970: 0)
        #expect(report(.backingOff(until: until)).text == "backing off after failures until \(until)")
        #expect([nil, .skippedTorNotReady, .backingOff(until: until), .failed(AppLayerError(.httpStatus, "x"))].allSatisfy { !report($0).succeeded })
        #expect(report(nil).jsonLine == #"{"outcome":"tor-not-ready","relays":7}"#)
    }

    /// The refresh through an activation: with the preference on and a tor that never becomes
    /// ready, the deadline passes and nothing is asked of the server; with it off, the directory
    /// is fetched from a real HTTP server on loopback, then not due.
    @Test func refreshWaitsForTorUpToItsDeadline() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("postern-geo-report-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try "Relay URL,Latitude,Longitude\nrelay.example.org,48.85,2.35\n".write(to: root.appendingPathComponent("relays.csv"), atomically: true, encoding: .utf8)
        let peer = try PeerProcess(script: "http_peer.py", arguments: ["127.0.0.1", "0", root.path])
        defer { peer.stop() }
        let source = URL(string: "http://127.0.0.1:\(try await peer.port())/relays.csv")!
        let cache = root.appendingPathComponent("state/geo-relays.csv")

        let waiting = NetworkActivationService(store: nil, readiness: TorManager())
        let late = await GeoRelayDirectory.refresh(from: source, cacheFile: cache, through: waiting, force: true, readinessTimeout: .milliseconds(300))
        #expect(late.outcome == nil && late.relays == 0 && !late.succeeded)
        #expect(!peer.output.contains { $0.hasPrefix("REQUEST") })

        let store = try BridgeStore(directory: root.appendingPathComponent("config").path, rules: Transports.argumentRules)
        let direct = NetworkActivationService(store: store, readiness: TorManager())
        try await direct.setTorPreference(false)
        let fetched = await GeoRelayDirectory.refresh(from: source, cacheFile: cache, through: direct, force: false, readinessTimeout: .seconds(60))
        #expect(fetched.outcome == .fetched(relayCount: 1) && fetched.relays == 1 && fetched.succeeded)
        // The peer's lines are collected as they come; wait for the request line, not only look.
        _ = try await peer.waitForLine(prefix: "REQUEST")
        let again = await GeoRelayDirectory.refresh(from: source, cacheFile: cache, through: direct, force: false, readinessTimeout: .seconds(60))
        #expect(again.outcome == .notDue && again.text == "not due: the cache (1 relays) is less than 24 h old; --force fetches anyway")
        #expect(peer.output.filter { $0.hasPrefix("REQUEST") }.count == 1)
    }
}
