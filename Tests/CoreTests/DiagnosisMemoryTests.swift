import BridgeConfig
import Foundation
import PosternLinkSpec
import PosternRuntime
import Testing
@testable import ConnectionAssist
@testable import PosternTor
import TransportBase

/// Issue 22, "remember the diagnosis per network with the route memory": a diagnosis that ruled a
/// route out is kept in `assist-memory.json` for its network; the next run there puts that route
/// last, says so, and skips it (no probe, no dial) while the block may still hold.
@Suite struct DiagnosisMemoryTests {
    static let network = "home"
    static let obfs4Key = "obfs4:command line"

    static func plan(_ memory: AssistMemory, lastGood: String? = nil, now: Date) -> AssistRoutePlan {
        AssistRoutePlan(yours: [ConnectionAssistTests.obfs4(3), ConnectionAssistTests.snowflake(6), RouteSelectorDiagnosisTests.webtunnel(7)],
                        yoursOrigin: .commandLine, builtins: [:], available: ConnectionAssistTests.available.union([.webtunnel]),
                        limits: RouteLimitTable(), lastGood: lastGood, includeDirect: false, memory: memory, network: network, now: now)
    }

    @Test func aRulingOutDiagnosisIsKeptPerNetworkUntilTheRouteWorksOrADayPasses() throws {
        let made = Date(timeIntervalSince1970: 2_000_000_000)
        var memory = AssistMemory(salt: String(repeating: "ab", count: 16))
        memory.recordDiagnosis(RouteSelectorDiagnosisTests.protocolBlock, routeKey: Self.obfs4Key, network: Self.network, now: made)
        // One that rules nothing out steers nothing: not kept.
        let inconclusive = RouteDiagnosis(technique: .inconclusive, confidence: .likely, observed: "reset; the address still answers",
                                          meaning: "", passes: [], rulesOutRoute: false)
        memory.recordDiagnosis(inconclusive, routeKey: "webtunnel:command line", network: Self.network, now: made)

        // Through the file, as the next run reads it.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("diagnosis-memory-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try memory.write(in: directory)
        var read = AssistMemory.read(in: directory)
        let kept = read.diagnoses(network: Self.network, now: made + 60)
        #expect(Array(kept.keys) == [Self.obfs4Key])
        #expect(kept[Self.obfs4Key]?.diagnosis == RouteSelectorDiagnosisTests.protocolBlock)
        // Per network: another network knows nothing of it.
        #expect(read.diagnoses(network: "elsewhere", now: made + 60).isEmpty)
        // A day later it no longer steers.
        #expect(read.diagnoses(network: Self.network, now: made + AssistMemory.diagnosisLifetime + 1).isEmpty)
        // The route worked here: the diagnosis goes.
        read.recordSuccess(Self.obfs4Key, network: Self.network, secondsToReady: 3, now: made + 120)
        #expect(read.diagnoses(network: Self.network, now: made + 121).isEmpty)

        // A file written before diagnoses were kept still reads (the routes, no diagnoses).
        let old = #"{"networks":{"home":{"routes":{"snowflake:command line":{"failures":0,"successes":1,"secondsToReady":3,"updated":"2033-05-18T03:33:20Z"}},"used":"2033-05-18T03:33:20Z"}},"salt":"\#(String(repeating: "cd", count: 16))","version":1}"#
        try Data(old.utf8).write(to: directory.appendingPathComponent(AssistMemory.fileName))
        let older = AssistMemory.read(in: directory)
        #expect(older.salt == String(repeating: "cd", count: 16))
        #expect(older.score("snowflake:command line", network: Self.network, now: made) > 0.9)
        #expect(older.diagnoses(network: Self.network, now: made).isEmpty)
    }

    @Test func theNextRunPutsTheRuledOutRouteLastAndSaysSo() {
        let made = Date(timeIntervalSince1970: 2_000_000_000)
        var memory = AssistMemory()
        // obfs4 worked here before (memory and the last good route would put it first) ...
        memory.recordSuccess(Self.obfs4Key, network: Self.network, secondsToReady: 2, now: made - 3_600)
        // ... then it was diagnosed.
        memory.recordDiagnosis(RouteSelectorDiagnosisTests.protocolBlock, routeKey: Self.obfs4Key, network: Self.network, now: made)
        let plan = Self.plan(memory, lastGood: Self.obfs4Key, now: made + 90)
        #expect(plan.routes.map(\.key) == ["snowflake:command line", "webtunnel:command line", Self.obfs4Key])
        #expect(!plan.lastGoodFirst)
        #expect(Array(plan.remembered.keys) == [Self.obfs4Key])
        #expect(plan.notes == ["bridges (obfs4, command line) goes last: on this network 90 s ago, "
                               + RouteSelectorDiagnosisTests.protocolBlock.description])
        // No bridge address in what the user reads.
        #expect(!plan.notes.joined().contains("192.0.2."))
        // On another network the order is the usual one.
        let elsewhere = AssistRoutePlan(yours: [ConnectionAssistTests.obfs4(3), ConnectionAssistTests.snowflake(6)], yoursOrigin: .commandLine,
                                        builtins: [:], available: ConnectionAssistTests.available, limits: RouteLimitTable(), lastGood: nil,
                                        includeDirect: false, memory: memory, network: "elsewhere", now: made + 150)
        #expect(elsewhere.routes.first?.key == Self.obfs4Key)
        #expect(elsewhere.notes.isEmpty)
    }

    @Test func whileItHoldsTheRouteIsNeitherProbedNorTried() throws {
        let routes = RouteSelectorDiagnosisTests.routes()
        // Made 60 s before this run: it holds for another 140 s.
        var selector = RouteSelector(routes: routes, strategy: .race)
        selector.remember(RouteSelectorDiagnosisTests.protocolBlock, forKey: "obfs4:command line", at: .zero - .seconds(60))
        #expect(!selector.unprobedKeys(at: .zero).contains("obfs4:command line"))
        let events = selector.start(at: .zero)
        var tried: String?
        for case .trying(let route, _, _, _) in events { tried = route.key }
        // Passed over without being applied, for a route that passes the protocol block.
        #expect(tried == "snowflake:built-in")
        let skipped = events.compactMap { if case .movedOn(let failure) = $0 { failure } else { nil } }
        #expect(skipped.map(\.route.key) == ["obfs4:command line"] && skipped.allSatisfy(\.skipped))
        #expect(skipped.first?.diagnosis?.technique == .protocolBlock)
        // Past its hold (200 s after it was made) it may be probed again.
        #expect(selector.unprobedKeys(at: .seconds(141)).contains("obfs4:command line"))

        // Made long ago: no longer holds; the route is tried in its place (the plan put it last).
        var later = RouteSelector(routes: routes, strategy: .race)
        later.remember(RouteSelectorDiagnosisTests.protocolBlock, forKey: "obfs4:command line", at: .zero - .seconds(3_600))
        var first: String?
        for case .trying(let route, _, _, _) in later.start(at: .zero) { first = route.key }
        #expect(first == "obfs4:command line")
    }

    @Test func theStatusShowsTheRememberedDiagnosis() async {
        let routes = RouteSelectorDiagnosisTests.routes()
        let made = Date(timeIntervalSince1970: 2_000_000_000)
        let kept = RememberedDiagnosis(RouteSelectorDiagnosisTests.protocolBlock, at: made)
        let assistant = ConnectionAssistant(routes: routes, tor: TorManager(), clock: ContinuousClock(), strategy: .race,
                                            remembered: ["obfs4:command line": kept, "gone:route": kept], wallClock: made + 30) { _ in }
        let diagnoses = await assistant.snapshot.diagnoses ?? []
        #expect(diagnoses.map(\.routeKey) == ["obfs4:command line"])
        #expect(diagnoses.first?.remembered == true && diagnoses.first?.technique == "protocol-block")
    }
}
