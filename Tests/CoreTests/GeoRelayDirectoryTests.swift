import PosternTestSupport
import BridgeConfig
import Foundation
import PosternRuntime
import Testing
@testable import PosternTor
@testable import PosternAppLayer

private let sampleCSV = """
Relay URL,Latitude,Longitude
relay.example.org,48.85,2.35
wss://nostr.example.net,40.71,-74.0
https://tokyo.example.jp/,35.68,139.69

"""

private func temporaryDirectory(_ name: String) -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("postern-\(name)-\(UUID().uuidString.prefix(8))")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A real HTTP server on loopback serving `files`; the test reads its request log.
private func startDirectoryServer(_ files: [String: String]) async throws -> (PeerProcess, UInt16, URL) {
    let root = temporaryDirectory("geo-served")
    for (name, content) in files { try content.write(to: root.appendingPathComponent(name), atomically: true, encoding: .utf8) }
    let peer = try PeerProcess(script: "http_peer.py", arguments: ["127.0.0.1", "0", root.path])
    return (peer, try await peer.port(), root)
}

@Suite struct GeoRelayCSVTests {
    @Test func acceptsBothHeadersCaseInsensitiveWithCRLF() throws {
        let relays = try GeoRelayCSV.parse(Data(sampleCSV.utf8))
        #expect(relays.map(\.host) == ["relay.example.org", "nostr.example.net", "tokyo.example.jp"])
        #expect(relays[1].latitude == 40.71 && relays[1].longitude == -74.0)
        let short = try GeoRelayCSV.parse(Data("RELAY URL,LAT,LON\r\nRelay.Example.org:4443,1,2\r\n".utf8))
        #expect(short == [GeoRelay(host: "relay.example.org:4443", latitude: 1, longitude: 2)])
        #expect(short[0].url == "wss://relay.example.org:4443")
    }

    static let rejections: [(String, String)] = [
        ("wrong header", "url,latitude,longitude\na.example,1,2\n"),
        ("header with 4 fields", "Relay URL,Latitude,Longitude,Extra\na.example,1,2\n"),
        ("empty file", ""),
        ("header only", "Relay URL,Latitude,Longitude\n"),
        ("two fields", "Relay URL,Latitude,Longitude\na.example,1\n"),
        ("four fields", "Relay URL,Latitude,Longitude\na.example,1,2,3\n"),
        ("ws scheme", "Relay URL,Latitude,Longitude\nws://a.example,1,2\n"),
        ("http scheme", "Relay URL,Latitude,Longitude\nhttp://a.example,1,2\n"),
        ("ftp scheme", "Relay URL,Latitude,Longitude\nftp://a.example,1,2\n"),
        ("localhost", "Relay URL,Latitude,Longitude\nlocalhost,1,2\n"),
        ("localhost URL", "Relay URL,Latitude,Longitude\nwss://LOCALHOST:443,1,2\n"),
        (".local", "Relay URL,Latitude,Longitude\nprinter.local,1,2\n"),
        (".internal", "Relay URL,Latitude,Longitude\nrelay.corp.internal,1,2\n"),
        ("non-ASCII host", "Relay URL,Latitude,Longitude\nrelé.example,1,2\n"),
        ("path", "Relay URL,Latitude,Longitude\nwss://a.example/nostr,1,2\n"),
        ("credentials", "Relay URL,Latitude,Longitude\nwss://user@a.example,1,2\n"),
        ("bad port", "Relay URL,Latitude,Longitude\na.example:99999,1,2\n"),
        ("empty host", "Relay URL,Latitude,Longitude\n,1,2\n"),
        ("latitude not a number", "Relay URL,Latitude,Longitude\na.example,north,2\n"),
        ("latitude out of range", "Relay URL,Latitude,Longitude\na.example,91,2\n"),
        ("longitude out of range", "Relay URL,Latitude,Longitude\na.example,1,-180.5\n"),
        ("NaN", "Relay URL,Latitude,Longitude\na.example,nan,2\n"),
        ("one bad row among good ones", "Relay URL,Latitude,Longitude\na.example,1,2\nb.example,1,2\nc.local,1,2\nd.example,1,2\n"),
        ("blank line inside", "Relay URL,Latitude,Longitude\na.example,1,2\n\nb.example,1,2\n"),
    ]

    @Test(arguments: rejections)
    func rejectsTheWholeFile(_ name: String, _ csv: String) {
        #expect(throws: AppLayerError.self, "\(name) must be rejected") { try GeoRelayCSV.parse(Data(csv.utf8)) }
        do {
            _ = try GeoRelayCSV.parse(Data(csv.utf8))
        } catch {
            #expect(error.code == .invalidCSV)
            #expect(error.message.hasPrefix("geo relay directory rejected: "))
        }
    }

    @Test func rejectionsNameTheLine() throws {
        let error = try #require(throws: AppLayerError.self) {
            try GeoRelayCSV.parse(Data("Relay URL,Latitude,Longitude\na.example,1,2\nb.local,1,2\n".utf8))
        }
        #expect(error.message.contains("line 3"), "\(error.message)")
    }

    @Test func rejectsNonUTF8() {
        #expect(throws: AppLayerError.self) { try GeoRelayCSV.parse(Data([0x52, 0xff, 0xfe, 0x0a])) }
    }

    @Test func sizeLimitIs512KiB() throws {
        var text = "Relay URL,Latitude,Longitude\n"
        let row = "relay-with-a-long-name-to-fill-the-file.example.org,12.345678,123.456789\n"
        while text.utf8.count + row.utf8.count <= GeoRelayCSV.maximumBytes { text += row }
        // Under the byte limit but over 5,000 rows: still rejected, for the row count.
        let rowCount = text.split(separator: "\n").count - 1
        #expect(rowCount > GeoRelayCSV.maximumRows)
        let tooMany = try #require(throws: AppLayerError.self) { try GeoRelayCSV.parse(Data(text.utf8)) }
        #expect(tooMany.message.contains("rows"))
        // Exactly 5,000 rows pass; 512 KiB + 1 byte fails for the size.
        let fiveThousand = "Relay URL,Latitude,Longitude\n" + String(repeating: "a.example,1,2\n", count: 5000)
        #expect(try GeoRelayCSV.parse(Data(fiveThousand.utf8)).count == 5000)
        let oversize = Data(("Relay URL,Latitude,Longitude\na.example,1,2\n" + String(repeating: " ", count: GeoRelayCSV.maximumBytes)).utf8)
        let tooBig = try #require(throws: AppLayerError.self) { try GeoRelayCSV.parse(oversize) }
        #expect(tooBig.message.contains("bytes"))
    }

    @Test func closestRelaysByHaversineWithTiesByHost() {
        let relays = [
            GeoRelay(host: "paris.example", latitude: 48.8566, longitude: 2.3522),
            GeoRelay(host: "nyc.example", latitude: 40.7128, longitude: -74.0060),
            GeoRelay(host: "b-twin.example", latitude: 35.0, longitude: 139.0),
            GeoRelay(host: "a-twin.example", latitude: 35.0, longitude: 139.0),
            GeoRelay(host: "london.example", latitude: 51.5074, longitude: -0.1278),
        ]
        let berlin = GeoCoordinate(latitude: 52.52, longitude: 13.405)
        #expect(GeoRelayDirectory.closest(relays, to: berlin, count: 2).map(\.host) == ["paris.example", "london.example"])
        let tokyo = GeoCoordinate(latitude: 35.0, longitude: 139.0)
        #expect(GeoRelayDirectory.closest(relays, to: tokyo, count: 2).map(\.host) == ["a-twin.example", "b-twin.example"])
        // Paris–London great-circle distance is about 344 km.
        let d = GeoRelayDirectory.haversineKilometres(GeoCoordinate(latitude: 48.8566, longitude: 2.3522),
                                                      GeoCoordinate(latitude: 51.5074, longitude: -0.1278))
        #expect(abs(d - 343.5) < 2, "\(d)")
        #expect(GeoRelayDirectory.closest(relays, to: berlin, count: 5).count == 5)
    }

    /// `postern geo show` without the CLI: no cache is nil, a cache gives its relays (or the
    /// nearest), a cache that no longer validates is an error.
    @Test func cachedRelaysWithoutFetching() throws {
        let state = temporaryDirectory("geo-cache")
        defer { try? FileManager.default.removeItem(at: state) }
        let file = GeoRelayDirectory.defaultCacheFile(inStateDirectory: state)
        #expect(file.lastPathComponent == "geo-relays.csv")
        #expect(try GeoRelayDirectory.cachedRelays(in: file) == nil)
        try sampleCSV.write(to: file, atomically: true, encoding: .utf8)
        #expect(try GeoRelayDirectory.cachedRelays(in: file)?.map(\.host) == ["relay.example.org", "nostr.example.net", "tokyo.example.jp"])
        let nearNewYork = try GeoRelayDirectory.cachedRelays(in: file, near: GeoCoordinate(latitude: 40, longitude: -75), count: 1)
        #expect(nearNewYork?.map(\.host) == ["nostr.example.net"])
        try "Relay URL,Latitude,Longitude\nrelay.example.org,91,0\n".write(to: file, atomically: true, encoding: .utf8)
        #expect(throws: AppLayerError.self) { try GeoRelayDirectory.cachedRelays(in: file) }
    }
}

/// The preference/readiness cases that do not need a running tor: the ready case runs against the
/// test bed (GeoRelayDirectoryTorTests in IntegrationTests).
@Suite struct GeoRelayDirectoryFetchTests {
    @Test func preferenceOffFetchesDirectlyWithNoWait() async throws {
        let (peer, port, served) = try await startDirectoryServer(["relays.csv": sampleCSV])
        defer { peer.stop(); try? FileManager.default.removeItem(at: served) }
        let state = temporaryDirectory("geo-off")
        defer { try? FileManager.default.removeItem(at: state) }
        // A tor that was never started: waiting on it would burn the whole 75 s.
        let activation = NetworkActivationService(store: try BridgeStore(directory: state.path, rules: Transports.argumentRules), readiness: TorManager())
        try await activation.setTorPreference(false)
        let cache = state.appendingPathComponent("geo/relays.csv")
        let directory = GeoRelayDirectory(sourceURL: URL(string: "http://127.0.0.1:\(port)/relays.csv")!, cacheFile: cache,
                                          http: ProxiedHTTPClient(activation: activation))
        let started = ContinuousClock.now
        let outcome = await directory.refresh()
        #expect(outcome == .fetched(relayCount: 3))
        #expect(ContinuousClock.now - started < .seconds(30), "no wait for tor (which would be 75 s)")
        #expect(await directory.relays.count == 3)
        #expect(peer.output.contains("REQUEST GET /relays.csv"))
        #expect(try String(contentsOf: cache, encoding: .utf8) == sampleCSV)
        let mode = try FileManager.default.attributesOfItem(atPath: cache.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // Within 24 h nothing is fetched again.
        #expect(await directory.refresh() == .notDue)
        #expect(peer.output.filter { $0.hasPrefix("REQUEST") }.count == 1)
        // A new directory on the same cache starts with the cached relays.
        let reloaded = GeoRelayDirectory(sourceURL: URL(string: "http://127.0.0.1:\(port)/relays.csv")!, cacheFile: cache,
                                         http: ProxiedHTTPClient(activation: activation))
        #expect(await reloaded.relays.count == 3)
    }

    @Test(arguments: ["on", "unreadable"])
    func preferenceOnAndTorNotReadySkipsAndKeepsTheCache(_ preference: String) async throws {
        let (peer, port, served) = try await startDirectoryServer(["relays.csv": "Relay URL,Latitude,Longitude\nnew.example,1,2\n"])
        defer { peer.stop(); try? FileManager.default.removeItem(at: served) }
        let state = temporaryDirectory("geo-on")
        defer { try? FileManager.default.removeItem(at: state) }
        let store = try BridgeStore(directory: state.path, rules: Transports.argumentRules)
        if preference == "unreadable" {
            // A stored value that cannot be read counts as ON.
            try Data("{ not json".utf8).write(to: URL(fileURLWithPath: store.filePath))
        }
        let activation = NetworkActivationService(store: store, readiness: TorManager())
        #expect(await activation.torPreference)
        let cache = state.appendingPathComponent("relays.csv")
        try Data(sampleCSV.utf8).write(to: cache)
        let directory = GeoRelayDirectory(sourceURL: URL(string: "http://127.0.0.1:\(port)/relays.csv")!, cacheFile: cache,
                                          http: ProxiedHTTPClient(activation: activation))
        let started = ContinuousClock.now
        #expect(await directory.refresh(force: true) == .skippedTorNotReady)
        #expect(ContinuousClock.now - started < .seconds(30), "the skip must not wait for tor (75 s)")
        #expect(await directory.relays.map(\.host) == ["relay.example.org", "nostr.example.net", "tokyo.example.jp"])
        #expect(try String(contentsOf: cache, encoding: .utf8) == sampleCSV)
        // The server is up (prove it answers) and saw nothing from the directory.
        try await Task.sleep(for: .milliseconds(300))
        #expect(!peer.output.contains { $0.hasPrefix("REQUEST") }, "\(peer.output)")
    }

    @Test func failuresBackOffFrom60sDoublingTo1hAndKeepTheCache() async throws {
        let (peer, port, served) = try await startDirectoryServer(["bad.csv": "Relay URL,Latitude,Longitude\nlocalhost,1,2\n"])
        defer { peer.stop(); try? FileManager.default.removeItem(at: served) }
        let state = temporaryDirectory("geo-backoff")
        defer { try? FileManager.default.removeItem(at: state) }
        let activation = NetworkActivationService(store: nil, readiness: TorManager())
        try await activation.setTorPreference(false)
        let clock = TestClock()
        let cache = state.appendingPathComponent("relays.csv")
        try Data(sampleCSV.utf8).write(to: cache)
        for (path, reason) in [("missing.csv", AppLayerError.Code.httpStatus), ("bad.csv", .invalidCSV)] {
            let directory = GeoRelayDirectory(sourceURL: URL(string: "http://127.0.0.1:\(port)/\(path)")!, cacheFile: cache,
                                              http: ProxiedHTTPClient(activation: activation), now: { clock.now })
            var delays: [TimeInterval] = []
            for _ in 0..<8 {
                guard case .failed(let error) = await directory.refresh(force: true) else {
                    Issue.record("expected a failure")
                    return
                }
                #expect(error.code == reason)
                let retry = try #require(await directory.nextRetry)
                delays.append(retry.timeIntervalSince(clock.now))
            }
            #expect(delays == [60, 120, 240, 480, 960, 1920, 3600, 3600])
            guard case .backingOff = await directory.refresh() else {
                Issue.record("an unforced refresh inside the backoff must wait")
                return
            }
            #expect(await directory.relays.count == 3, "the cache survives failed fetches")
        }
        #expect(try String(contentsOf: cache, encoding: .utf8) == sampleCSV)
    }
}

final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current = Date(timeIntervalSince1970: 1_800_000_000)
    var now: Date { lock.withLock { current } }
    func advance(_ seconds: TimeInterval) { lock.withLock { current += seconds } }
}
