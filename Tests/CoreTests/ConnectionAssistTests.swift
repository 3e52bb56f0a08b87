import BridgeConfig
import Foundation
import PosternLinkSpec
import PosternRuntime
import Synchronization
import Testing
@testable import ConnectionAssist
@testable import PosternTor

/// Connection assist's route order and state machine. The selector has no clock of its own: each
/// input carries the time, so these tests drive it with exact, made-up times.
@Suite struct ConnectionAssistTests {
    // Documentation addresses (192.0.2.0/24): these lines are only parsed, never dialled.
    static let cert = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMw"
    static func obfs4(_ host: Int) -> BridgeLine {
        try! BridgeLine(validating: "obfs4 192.0.2.\(host):443 \(String(repeating: "A", count: 39))\(host % 10) cert=\(cert) iat-mode=0", rules: Transports.argumentRules)
    }
    static func snowflake(_ host: Int) -> BridgeLine {
        try! BridgeLine(validating: "snowflake 192.0.2.\(host):80 url=https://broker.example/ ice=stun:stun.example:3478", rules: Transports.argumentRules)
    }
    static func vanilla(_ host: Int) -> BridgeLine {
        try! BridgeLine(validating: "192.0.2.\(host):9001 \(String(repeating: "B", count: 39))\(host % 10)", rules: Transports.argumentRules)
    }
    static func other(_ name: String, _ host: Int) -> BridgeLine {
        try! BridgeLine(validating: "\(name) 192.0.2.\(host):443 \(String(repeating: "C", count: 39))\(host % 10)", rules: Transports.argumentRules)
    }

    static let available: Set<TransportName> = [.obfs4, .snowflake, .vanilla, TransportName("fancy")!]

    private func plan(yours: [BridgeLine] = [], builtins: [TransportName: [BridgeLine]] = [:], lastGood: String? = nil,
                      available: Set<TransportName> = available) -> AssistRoutePlan {
        AssistRoutePlan(yours: yours, builtins: builtins, available: available, limits: RouteLimitTable(), lastGood: lastGood)
    }

    // MARK: Order

    @Test func triesDirectThenYourObfs4ThenBuiltinObfs4ThenSnowflakeThenOthers() {
        let routes = plan(yours: [Self.vanilla(1), Self.other("fancy", 2), Self.obfs4(3), Self.snowflake(4)],
                          builtins: [.obfs4: [Self.obfs4(5)], .snowflake: [Self.snowflake(6)]]).routes
        #expect(routes.map(\.key) == ["direct", "obfs4:yours", "obfs4:built-in", "snowflake:yours", "snowflake:built-in",
                                      "fancy:yours", "vanilla:yours"])
        #expect(routes.map(\.label).prefix(3) == ["direct", "bridges (obfs4, yours)", "bridges (obfs4, built-in)"])
        #expect(routes[1].bridges == [Self.obfs4(3)])
        #expect(routes[2].bridges == [Self.obfs4(5)])
        #expect(routes[0].limits == .directDefault)
        #expect(routes[1].limits == .obfs4Default)
        #expect(routes[4].limits == .snowflakeDefault)
    }

    /// dnstt (issue #23) is tried after everything else, plain bridges included, and its "trying"
    /// line says why.
    @Test func dnsttGoesLastAndItsTryingLineSaysWhy() throws {
        let dnstt = try BridgeLine(validating: "dnstt 192.0.2.4:1 udp=198.51.100.53:53 pubkey=\(String(repeating: "ab", count: 32)) domain=t.example.com",
                                   rules: Transports.argumentRules)
        var available = Self.available
        available.insert(.dnstt)
        let routes = plan(yours: [dnstt, Self.vanilla(1), Self.other("fancy", 2), Self.obfs4(3)], available: available).routes
        #expect(routes.map(\.key) == ["direct", "obfs4:yours", "fancy:yours", "vanilla:yours", "dnstt:yours"])
        let line = try #require(AssistEvent.trying(routes[4], position: 5, count: 5, cycle: 1).line(racing: true))
        #expect(line.contains("dnstt is tried last: it is slow") && line.contains("resolver"))
        #expect(AssistEvent.trying(routes[1], position: 2, count: 5, cycle: 1).line(racing: true)?.contains("dnstt") == false)
    }

    @Test func skipsTransportsThisBuildLacksAndBuiltinsThatDuplicateYours() {
        let result = plan(yours: [Self.obfs4(3), Self.other("zebra", 7)], builtins: [.obfs4: [Self.obfs4(3), Self.obfs4(8)]])
        #expect(result.routes.map(\.key) == ["direct", "obfs4:yours", "obfs4:built-in"])
        #expect(result.routes[2].bridges == [Self.obfs4(8)], "the built-in copy of your own bridge is left out")
        #expect(result.notes.count == 1)
        #expect(result.notes.first?.contains("zebra") == true)
    }

    @Test func putsTheLastGoodRouteFirstAndIgnoresAnUnknownOne() {
        let builtins: [TransportName: [BridgeLine]] = [.obfs4: [Self.obfs4(5)], .snowflake: [Self.snowflake(6)]]
        let remembered = plan(builtins: builtins, lastGood: "snowflake:built-in")
        #expect(remembered.routes.map(\.key) == ["snowflake:built-in", "direct", "obfs4:built-in"])
        #expect(remembered.lastGoodFirst)
        let gone = plan(builtins: builtins, lastGood: "obfs4:yours")
        #expect(gone.routes.map(\.key) == ["direct", "obfs4:built-in", "snowflake:built-in"])
        #expect(!gone.lastGoodFirst)
        let directFirst = plan(builtins: builtins, lastGood: "direct")
        #expect(directFirst.routes.first?.key == "direct")
        #expect(directFirst.lastGoodFirst)
    }

    @Test func commandLineBridgesAreTheOnlyRoutes() {
        let routes = AssistRoutePlan(yours: [Self.snowflake(4), Self.obfs4(3)], yoursOrigin: .commandLine,
                                     builtins: [.obfs4: [Self.obfs4(5)]], available: Self.available,
                                     limits: RouteLimitTable(), lastGood: nil, includeDirect: false).routes
        #expect(routes.map(\.key) == ["obfs4:command line", "obfs4:built-in", "snowflake:command line"])
    }

    // MARK: Limits

    @Test func limitsParseOverrideAndCap() throws {
        let limits = try RouteLimits(parsing: "20/15")
        #expect(limits.ceiling == .seconds(20) && limits.noProgressWindow == .seconds(15))
        #expect(limits.description == "20/15")
        #expect(try RouteLimits(parsing: "2.5/1").description == "2.5/1")
        for bad in ["20", "20/", "/15", "0/5", "-1/5", "a/b", "20/15/3", "inf/5"] {
            #expect(throws: TorCoreError.self, "\(bad)") { try RouteLimits(parsing: bad) }
        }
        var table = RouteLimitTable()
        table.set(limits, forKind: try RouteLimitTable.kind(validating: "direct"))
        table.set(try RouteLimits(parsing: "30/20"), forKind: try RouteLimitTable.kind(validating: "OBFS4"))
        #expect(table.limits(for: nil) == limits)
        #expect(table.limits(for: .obfs4).ceiling == .seconds(30))
        #expect(table.limits(for: .snowflake) == .snowflakeDefault)
        #expect(table.limits(for: .vanilla) == .directDefault)
        table.ceilingCap = .seconds(6)
        #expect(table.limits(for: .snowflake) == RouteLimits(ceiling: .seconds(6), noProgressWindow: .seconds(6)))
        #expect(throws: TorCoreError.self) { try RouteLimitTable.kind(validating: "not a name") }
    }

    // MARK: State machine

    private static func routes(_ limits: [(Int, Int)]) -> [AssistRoute] {
        let kinds: [TransportName?] = [nil, .obfs4, .snowflake, .vanilla]
        return limits.enumerated().map { index, pair in
            let limits = RouteLimits(ceiling: .seconds(pair.0), noProgressWindow: .seconds(pair.1))
            guard let transport = kinds[index % kinds.count] else { return .direct(limits: limits) }
            return AssistRoute(transport: transport, origin: .yours, bridges: [], limits: limits)
        }
    }

    private func trying(_ events: [AssistEvent]) -> (key: String, position: Int, cycle: Int)? {
        for case .trying(let route, let position, _, let cycle) in events { return (route.key, position, cycle) }
        return nil
    }

    private func failure(_ events: [AssistEvent]) -> RouteFailure? {
        for case .movedOn(let failure) in events { return failure }
        return nil
    }

    @Test func noProgressWindowRestartsOnEveryNewPercentage() {
        var selector = RouteSelector(routes: Self.routes([(45, 30), (120, 90)]))
        #expect(trying(selector.start(at: .seconds(100)))?.key == "direct")
        #expect(selector.nextDeadline == .seconds(130))
        #expect(selector.observe(progress: 5, tag: "conn", ready: false, at: .seconds(110)).isEmpty)
        #expect(selector.nextDeadline == .seconds(140), "progress moved the no-progress deadline")
        #expect(selector.tick(at: .seconds(139)).isEmpty)
        // The same percentage again is not progress.
        _ = selector.observe(progress: 5, tag: "conn", ready: false, at: .seconds(135))
        let events = selector.tick(at: .seconds(140))
        let left = failure(events)
        #expect(left?.reason == .noProgress)
        #expect(left?.progress == 5 && left?.tag == "conn")
        #expect(left?.description == #"stalled at 5% "conn" for 30 s"#)
        #expect(trying(events)?.key == "obfs4:yours")
        #expect(trying(events)?.position == 2)
        #expect(selector.triedKeys == ["direct", "obfs4:yours"])
    }

    @Test func ceilingEndsARouteThatKeepsCreeping() {
        var selector = RouteSelector(routes: Self.routes([(45, 30), (120, 90)]))
        _ = selector.start(at: .zero)
        for second in stride(from: 10, through: 40, by: 10) {
            _ = selector.observe(progress: second, tag: "step\(second)", ready: false, at: .seconds(second))
            #expect(selector.tick(at: .seconds(second)).isEmpty)
        }
        #expect(selector.tick(at: .seconds(44)).isEmpty)
        let events = selector.tick(at: .seconds(45))
        let left = failure(events)
        #expect(left?.reason == .ceilingReached)
        #expect(left?.description == #"ceiling of 45 s reached at 40% "step40""#)
        #expect(trying(events)?.key == "obfs4:yours")
        // The next route's clock starts when it starts.
        #expect(selector.nextDeadline == .seconds(45 + 90))
    }

    @Test func readyConnectsAndStopsJudging() {
        var selector = RouteSelector(routes: Self.routes([(45, 30), (120, 90)]))
        _ = selector.start(at: .seconds(1))
        _ = selector.tick(at: .seconds(31))
        let events = selector.observe(progress: 100, tag: "done", ready: true, at: .seconds(40))
        #expect(events == [.connected(selector.routes[1], after: .seconds(39))])
        #expect(selector.phase == .connected)
        #expect(selector.nextDeadline == nil)
        #expect(selector.tick(at: .seconds(1000)).isEmpty)
        // 100% without the SOCKS listener is not ready yet.
        var other = RouteSelector(routes: Self.routes([(45, 30)]))
        _ = other.start(at: .zero)
        #expect(other.observe(progress: 100, tag: "done", ready: false, at: .seconds(1)).isEmpty)
    }

    @Test func everyRouteFailingBacksOff5To120SecondsAndSaysSo() {
        var selector = RouteSelector(routes: Self.routes([(10, 5), (20, 5)]))
        var now = Duration.zero
        _ = selector.start(at: now)
        var delays: [Duration] = []
        for pass in 1...8 {
            #expect(selector.cycle == pass)
            now += .seconds(5)
            let first = selector.tick(at: now)
            #expect(trying(first)?.key == "obfs4:yours", "pass \(pass)")
            now += .seconds(5)
            let events = selector.tick(at: now)
            guard case .allFailed(let failures, let retryIn)? = events.last else {
                Issue.record("pass \(pass): \(events)")
                return
            }
            #expect(failures.map(\.route.key) == ["direct", "obfs4:yours"])
            #expect(failures.allSatisfy { $0.reason == .noProgress })
            #expect(selector.allFailed)
            #expect(selector.failedPasses == pass)
            delays.append(retryIn)
            #expect(selector.tick(at: now + retryIn - .milliseconds(1)).isEmpty, "waits the whole backoff")
            now += retryIn
            let next = selector.tick(at: now)
            #expect(trying(next).map { [$0.key, "\($0.cycle)"] } == ["direct", "\(pass + 1)"])
            #expect(!selector.allFailed)
        }
        #expect(delays == [5, 10, 20, 40, 80, 120, 120, 120].map { Duration.seconds($0) })
        #expect(RouteSelector.Backoff.standard.delay(afterFailedPasses: 1) == .seconds(5))
        #expect(RouteSelector.Backoff.standard.delay(afterFailedPasses: 100) == .seconds(120))
    }

    @Test func readyWhileBackingOffConnectsOnTheLastRouteAndResetsTheBackoff() {
        var selector = RouteSelector(routes: Self.routes([(10, 5), (10, 5)]))
        _ = selector.start(at: .zero)
        _ = selector.tick(at: .seconds(5))
        _ = selector.tick(at: .seconds(10))
        #expect(selector.allFailed)
        let events = selector.observe(progress: 100, tag: "done", ready: true, at: .seconds(12))
        #expect(events == [.connected(selector.routes[1], after: .seconds(12))])
        #expect(selector.failedPasses == 0)
        #expect(!selector.allFailed)
    }

    @Test func anUnusableRouteIsLeftAtOnce() {
        var selector = RouteSelector(routes: Self.routes([(45, 30), (120, 90)]))
        _ = selector.start(at: .zero)
        let events = selector.routeUnavailable("no listener", at: .seconds(1))
        #expect(failure(events)?.reason == .unavailable)
        #expect(failure(events)?.description == "could not be used: no listener")
        #expect(trying(events)?.key == "obfs4:yours")
    }

    @Test func changedSettingsTryANewRouteAtOnceAndKeepAConnectedOne() {
        let old = Self.routes([(45, 30)])
        var selector = RouteSelector(routes: old)
        _ = selector.start(at: .zero)
        _ = selector.tick(at: .seconds(30))
        #expect(selector.allFailed)
        let added = old + [AssistRoute(transport: .vanilla, origin: .yours, bridges: [Self.vanilla(1)], limits: .directDefault)]
        let events = selector.replaceRoutes(added, at: .seconds(31))
        #expect(trying(events)?.key == "vanilla:yours")
        #expect(!selector.allFailed)
        _ = selector.observe(progress: 100, tag: "done", ready: true, at: .seconds(40))
        // A connected route that is still there stays; nothing is re-applied.
        #expect(selector.replaceRoutes(added.reversed(), at: .seconds(50)).isEmpty)
        #expect(selector.currentRoute?.key == "vanilla:yours")
        // A connected route that went away starts the search again.
        let restart = selector.replaceRoutes(old, at: .seconds(60))
        #expect(trying(restart)?.key == "direct")
    }

    // MARK: Files

    @Test func lastGoodRouteAndLimitsAreWrittenAtomicallyWithMode0600() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("assist-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(AssistFiles.readLastGoodRoute(in: directory) == nil)
        try AssistFiles.writeLastGoodRoute("obfs4:yours", in: directory)
        try AssistFiles.writeLastGoodRoute("snowflake:built-in", in: directory)
        #expect(AssistFiles.readLastGoodRoute(in: directory) == "snowflake:built-in")
        let file = directory.appendingPathComponent(AssistFiles.lastRouteFileName)
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == [AssistFiles.lastRouteFileName],
                "no temporary file left behind")

        #expect(try AssistFiles.readLimits(in: directory) == RouteLimitTable())
        var table = RouteLimitTable()
        table.set(try RouteLimits(parsing: "20/15"), forKind: "direct")
        try AssistFiles.writeLimits(table, in: directory)
        #expect(try AssistFiles.readLimits(in: directory) == table)
        try Data("{\"version\":1,\"limits\":{\"direct\":\"x\"}}".utf8).write(to: directory.appendingPathComponent(AssistFiles.settingsFileName))
        #expect(throws: TorCoreError.self) { try AssistFiles.readLimits(in: directory) }
    }

    /// Eight writers at once, each changing its own kind: the lock keeps every change (a plain
    /// read-modify-write loses some of them).
    @Test func concurrentLimitUpdatesLoseNothing() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-limits-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let kinds = ["direct", "vanilla", "obfs4", "snowflake", "webtunnel", "meek_lite", "obfs3", "scramblesuit"]
        let failures = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: kinds.count) { index in
            do {
                try AssistFiles.updateLimits(in: directory) { table in
                    table.set(RouteLimits(ceiling: .seconds(10 + index), noProgressWindow: .seconds(5)), forKind: kinds[index])
                }
            } catch {
                failures.withLock { $0 += 1 }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        let stored = try AssistFiles.readLimits(in: directory)
        #expect(Set(stored.overrides.keys) == Set(kinds))
        #expect(stored.overrides["obfs3"] == RouteLimits(ceiling: .seconds(16), noProgressWindow: .seconds(5)))
        let mode = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(AssistFiles.settingsFileName).path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }
}
