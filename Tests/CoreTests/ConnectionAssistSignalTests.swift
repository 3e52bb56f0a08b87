import BridgeConfig
import Foundation
import PosternLinkSpec
import Testing
import TransportBase
@testable import ConnectionAssist
@testable import PosternTor

/// Issue 14: tor's failure signals (parsed from control replies), the race strategy's decisions
/// fed with made-up event sequences, and the per-network memory.
@Suite struct ConnectionAssistSignalTests {
    // MARK: Parsing tor's events

    @Test func parsesOrConnectionEvents() throws {
        let failed = try #require(try OrConnectionEvent.parse(eventText: "ORCONN $AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA~relay1 FAILED REASON=CONNECTREFUSED NCIRCS=1 ID=7"))
        #expect(failed.status == .failed)
        #expect(failed.reason == "CONNECTREFUSED")
        #expect(failed.target.hasPrefix("$AAAA"))
        #expect(ConnectionSignal(failed)?.problem == .refused)
        #expect(ConnectionSignal(failed)?.source == .orConnection)

        let byAddress = try #require(try OrConnectionEvent.parse(eventText: "ORCONN 10.0.0.1:9001 CLOSED REASON=CONNECTRESET ID=8"))
        #expect(byAddress.target == "10.0.0.1:9001")
        #expect(ConnectionSignal(byAddress)?.problem == .reset)

        // Housekeeping and progress say nothing about the route.
        let done = try #require(try OrConnectionEvent.parse(eventText: "ORCONN $BB~r CLOSED REASON=DONE"))
        #expect(ConnectionSignal(done) == nil)
        let launched = try #require(try OrConnectionEvent.parse(eventText: "ORCONN $BB~r LAUNCHED ID=9"))
        #expect(launched.status == .launched && launched.reason == nil)
        #expect(ConnectionSignal(launched) == nil)
        let connected = try #require(try OrConnectionEvent.parse(eventText: "ORCONN $BB~r CONNECTED ID=9"))
        #expect(ConnectionSignal(connected) == nil)

        #expect(try OrConnectionEvent.parse(eventText: "STATUS_CLIENT NOTICE BOOTSTRAP PROGRESS=5") == nil)
        #expect(throws: TorCoreError.self) { try OrConnectionEvent.parse(eventText: "ORCONN onlytarget") }
        #expect(throws: TorCoreError.self) { try OrConnectionEvent.parse(eventText: "ORCONN $A FAILED REASON=\"unterminated") }
    }

    @Test func parsesTheProblemOfABootstrapWarning() throws {
        let text = #"WARN BOOTSTRAP PROGRESS=10 TAG=conn_done SUMMARY="Connected to a relay" WARNING="Connection reset by peer" REASON=CONNECTRESET COUNT=4 RECOMMENDATION=warn HOST=$CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC HOSTADDR=10.0.0.2:9001"#
        let phase = try #require(try BootstrapPhase.parse(statusText: text))
        #expect(phase.progress == 10)
        #expect(phase.warning == "Connection reset by peer")
        let problem = try #require(phase.problem)
        #expect(problem.reason == "CONNECTRESET")
        #expect(problem.count == 4)
        #expect(problem.recommendation == "warn")
        #expect(problem.host == "$CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC")
        let signal = try #require(ConnectionSignal(problem))
        #expect(signal.problem == .reset && signal.count == 4 && signal.torRecommendsWarning)

        let addressOnly = try #require(try BootstrapPhase.parse(statusText: "WARN BOOTSTRAP PROGRESS=5 TAG=conn REASON=TIMEOUT COUNT=x HOSTADDR=10.0.0.3:443"))
        #expect(addressOnly.problem?.host == "10.0.0.3:443")
        #expect(addressOnly.problem?.count == nil, "a COUNT that is not a number is ignored")
        #expect(ConnectionSignal(addressOnly.problem!)?.problem == .timeout)

        let notice = try #require(try BootstrapPhase.parse(statusText: "NOTICE BOOTSTRAP PROGRESS=15 TAG=handshake_done SUMMARY=x"))
        #expect(notice.problem == nil && notice.warning == nil)
        let misc = try #require(try BootstrapPhase.parse(statusText: "WARN BOOTSTRAP PROGRESS=5 TAG=conn REASON=MISC"))
        #expect(ConnectionSignal(misc.problem!) == nil, "MISC says nothing about the route")
    }

    @Test func typedTransportErrorsBecomeProblems() {
        #expect(ConnectionProblem(transportCode: "connection-refused", kind: "network") == .refused)
        #expect(ConnectionProblem(transportCode: "connection-reset", kind: "network") == .reset)
        #expect(ConnectionProblem(transportCode: "obfs4-handshake-timeout", kind: "timeout") == .timeout)
        #expect(ConnectionProblem(transportCode: "obfs4-server-mac-mismatch", kind: "protocol") == .handshake)
        #expect(ConnectionProblem(transportCode: "host-unreachable", kind: "network") == .noRoute)
    }

    // MARK: Decisions

    static let cert = ConnectionAssistTests.cert
    static func obfs4(_ host: Int) -> BridgeLine { ConnectionAssistTests.obfs4(host) }

    static func routes() -> [AssistRoute] {
        [.direct(limits: RouteLimits(ceiling: .seconds(45), noProgressWindow: .seconds(30))),
         AssistRoute(transport: .obfs4, origin: .yours, bridges: [obfs4(3)], limits: .obfs4Default),
         AssistRoute(transport: .snowflake, origin: .builtin, bridges: [ConnectionAssistTests.snowflake(6)], limits: .snowflakeDefault)]
    }

    private func orconn(_ relay: Int, _ reason: String = "CONNECTREFUSED") -> ConnectionSignal {
        ConnectionSignal(OrConnectionEvent(target: "$\(String(repeating: "\(relay % 10)", count: 40))~relay\(relay)", status: .failed, reason: reason))!
    }

    private func trying(_ events: [AssistEvent]) -> String? {
        for case .trying(let route, _, _, _) in events { return route.key }
        return nil
    }

    private func movedOn(_ events: [AssistEvent]) -> [RouteFailure] {
        events.compactMap { if case .movedOn(let failure) = $0 { failure } else { nil } }
    }

    private func passed(_ ms: Double) -> ProbeResult {
        ProbeResult(outcome: .passed, milliseconds: ms, steps: [.init(name: "tcp", outcome: .passed, milliseconds: ms)], peersTried: 1, peersAnswered: 1)
    }

    private func failed(_ problem: ConnectionProblem, _ ms: Double = 3000) -> ProbeResult {
        ProbeResult(outcome: .failed, milliseconds: ms, steps: [.init(name: "tcp", outcome: .failed, milliseconds: ms, problem: problem)],
                    peersTried: 3, peersAnswered: 0, problem: problem)
    }

    @Test func refusedConnectionsTowardsSeveralRelaysLeaveTheRouteInSeconds() {
        var selector = RouteSelector(routes: Self.routes(), strategy: .race)
        #expect(trying(selector.start(at: .zero)) == "direct")
        _ = selector.observe(progress: 5, tag: "conn", ready: false, at: .milliseconds(300))
        // Within the grace after applying: left over from the previous configuration.
        #expect(selector.observe(signal: orconn(1), at: .milliseconds(500)).isEmpty)
        #expect(selector.observe(signal: orconn(2), at: .milliseconds(1500)).isEmpty)
        #expect(selector.observe(signal: orconn(2), at: .milliseconds(1700)).isEmpty, "two failures are not enough")
        let events = selector.observe(signal: orconn(3, "CONNECTRESET"), at: .milliseconds(2100))
        let left = movedOn(events).first
        #expect(left?.reason == .connectionsFailing)
        #expect(left?.failures == 3 && left?.distinctPeers == 2)
        #expect(left?.problem == .refused)
        #expect(left?.description.contains("3 connections failed (mostly refused) towards 2 distinct peers") == true, "\(left?.description ?? "")")
        #expect(trying(events) == "obfs4:yours")
    }

    @Test func failuresTowardsOneRelayOrBeforeProgressDoNotLeaveDirect() {
        var selector = RouteSelector(routes: Self.routes(), strategy: .race)
        _ = selector.start(at: .zero)
        for second in 2...8 { #expect(selector.observe(signal: orconn(1, "TIMEOUT"), at: .seconds(second)).isEmpty) }
        // Progress forgets what came before it: the odd dead relay of a working network.
        _ = selector.observe(progress: 10, tag: "conn_done", ready: false, at: .seconds(9))
        #expect(selector.tally.failures == 0)
        #expect(selector.observe(signal: orconn(2), at: .seconds(10)).isEmpty)
        #expect(selector.observe(signal: orconn(3), at: .seconds(11)).isEmpty)
        #expect(selector.phase == .trying && selector.currentRoute?.key == "direct")
    }

    @Test func aBridgeRouteCountsOnlyItsOwnBridgesAndFailsWithItsOnlyBridge() {
        var selector = RouteSelector(routes: Array(Self.routes().dropFirst()), strategy: .race)
        #expect(trying(selector.start(at: .zero)) == "obfs4:yours")
        // Late failures of direct's relays after the switch are not the bridge's.
        for relay in 1...5 { #expect(selector.observe(signal: orconn(relay), at: .seconds(2)).isEmpty) }
        let bridge = Self.obfs4(3)
        let own = ConnectionSignal(OrConnectionEvent(target: "$\(bridge.fingerprint!.hex)~bridge", status: .failed, reason: "CONNECTRESET"))!
        #expect(selector.observe(signal: own, at: .seconds(2)).isEmpty)
        #expect(selector.observe(signal: own, at: .seconds(3)).isEmpty)
        let events = selector.observe(signal: own, at: .seconds(4))
        #expect(movedOn(events).first?.reason == .connectionsFailing, "one bridge is all the peers this route has")
        #expect(trying(events) == "snowflake:built-in")
    }

    @Test func torsOwnWarningCountIsEnoughWithSeveralPeers() {
        var selector = RouteSelector(routes: Self.routes(), strategy: .race)
        _ = selector.start(at: .zero)
        func warning(_ host: Int, count: Int) -> ConnectionSignal {
            ConnectionSignal(BootstrapProblem(reason: "CONNECTREFUSED", count: count, recommendation: "warn", host: "$\(host)"))!
        }
        #expect(selector.observe(signal: warning(1, count: 1), at: .seconds(2)).isEmpty)
        #expect(selector.observe(signal: warning(2, count: 2), at: .seconds(2)).isEmpty)
        #expect(movedOn(selector.observe(signal: warning(3, count: 3), at: .seconds(3))).first?.reason == .connectionsFailing)
    }

    @Test func aFailedProbeOfTheCurrentRouteSwitchesToTheBestRouteThatPassed() {
        var selector = RouteSelector(routes: Self.routes(), strategy: .race)
        _ = selector.start(at: .zero)
        #expect(selector.unprobedKeys == ["direct", "obfs4:yours", "snowflake:built-in"])
        // snowflake answers first; direct's probe still runs: nothing to judge yet.
        let snow = selector.probeFinished(passed(900), forKey: "snowflake:built-in", cycle: 1, at: .milliseconds(900))
        #expect(snow == [.probed(selector.routes[2], passed(900))])
        // obfs4 fails: it is not the current route; it will be passed over.
        #expect(movedOn(selector.probeFinished(failed(.timeout), forKey: "obfs4:yours", cycle: 1, at: .seconds(3))).isEmpty)
        // direct fails while snowflake passed: leave at once, pass over obfs4, choose snowflake.
        let events = selector.probeFinished(failed(.timeout), forKey: "direct", cycle: 1, at: .milliseconds(3050))
        let failures = movedOn(events)
        #expect(failures.map(\.route.key) == ["direct"], "obfs4 was passed over only if it came before the choice")
        #expect(failures.first?.reason == .probeFailed)
        #expect(trying(events) == "snowflake:built-in")
        #expect(events.contains(.chose(RouteChoice(route: selector.routes[2], reason: .probePassed, probe: passed(900)))))
        // A stale probe of an old pass is ignored.
        #expect(selector.probeFinished(passed(1), forKey: "obfs4:yours", cycle: 0, at: .seconds(4)).isEmpty)
    }

    @Test func aFailureOlderThanEveryPassIsCheckedAgainNotTrusted() {
        var selector = RouteSelector(routes: Self.routes(), strategy: .race)
        _ = selector.start(at: .zero)
        // The network was down (or held) when direct's probe ran; snowflake's came through later.
        _ = selector.probeFinished(failed(.timeout), forKey: "direct", cycle: 1, at: .seconds(3))
        #expect(movedOn(selector.probeFinished(passed(4300), forKey: "snowflake:built-in", cycle: 1, at: .milliseconds(4300))).isEmpty)
        #expect(selector.currentRoute?.key == "direct")
        #expect(selector.currentFailureNeedsRecheck)
        selector.probeStarted(forKey: "direct", cycle: 1)
        #expect(!selector.currentFailureNeedsRecheck, "already being checked")
        // Checked again, it passes: direct stays.
        #expect(movedOn(selector.probeFinished(passed(2), forKey: "direct", cycle: 1, at: .milliseconds(4400))).isEmpty)
        #expect(selector.currentRoute?.key == "direct" && !selector.currentFailureNeedsRecheck)
        // Had it failed again, now after a pass, it would be left.
        var other = RouteSelector(routes: Self.routes(), strategy: .race)
        _ = other.start(at: .zero)
        _ = other.probeFinished(failed(.timeout), forKey: "direct", cycle: 1, at: .seconds(3))
        _ = other.probeFinished(passed(4300), forKey: "snowflake:built-in", cycle: 1, at: .milliseconds(4300))
        #expect(movedOn(other.probeFinished(failed(.timeout), forKey: "direct", cycle: 1, at: .milliseconds(7400))).first?.reason == .probeFailed)
    }

    @Test func anEarlierRouteStillBeingProbedIsWaitedForBeforeALaterOneThatPassed() {
        var selector = RouteSelector(routes: Self.routes(), strategy: .race)
        _ = selector.start(at: .zero)
        for key in ["direct", "obfs4:yours", "snowflake:built-in"] { selector.probeStarted(forKey: key, cycle: 1) }
        _ = selector.probeFinished(passed(300), forKey: "snowflake:built-in", cycle: 1, at: .milliseconds(300))
        // direct failed, snowflake passed, but obfs4 (ahead of snowflake) is still being probed.
        #expect(movedOn(selector.probeFinished(failed(.timeout), forKey: "direct", cycle: 1, at: .seconds(3))).isEmpty)
        #expect(selector.currentRoute?.key == "direct")
        let events = selector.probeFinished(passed(3100), forKey: "obfs4:yours", cycle: 1, at: .milliseconds(3100))
        #expect(movedOn(events).first?.reason == .probeFailed)
        #expect(trying(events) == "obfs4:yours", "the route ahead in the order, once it answered")
    }

    @Test func aRouteWhoseProbeFailedIsPassedOverAndNamedInTheFailures() {
        var selector = RouteSelector(routes: Self.routes(), strategy: .race)
        _ = selector.start(at: .zero)
        _ = selector.probeFinished(failed(.refused, 20), forKey: "obfs4:yours", cycle: 1, at: .milliseconds(20))
        _ = selector.probeFinished(failed(.refused, 25), forKey: "snowflake:built-in", cycle: 1, at: .milliseconds(25))
        #expect(selector.currentRoute?.key == "direct", "nothing passed: a failed probe alone proves nothing")
        // direct's probe passes; its bootstrap then stalls (DPI after the handshake): the window catches it.
        #expect(movedOn(selector.probeFinished(passed(5), forKey: "direct", cycle: 1, at: .milliseconds(30))).isEmpty)
        // Their failures came before any pass: not trusted until probed again, and they fail again.
        _ = selector.probeFinished(failed(.refused, 20), forKey: "obfs4:yours", cycle: 1, at: .milliseconds(2040))
        _ = selector.probeFinished(failed(.refused, 25), forKey: "snowflake:built-in", cycle: 1, at: .milliseconds(2050))
        let events = selector.tick(at: .seconds(30))
        let failures = movedOn(events)
        #expect(failures.map(\.reason) == [.noProgress, .probeFailed, .probeFailed])
        #expect(failures.dropFirst().allSatisfy { $0.skipped })
        #expect(failures.last?.description.hasPrefix("not tried: probe failed after 25 ms: refused") == true, "\(failures.last?.description ?? "")")
        guard case .allFailed(let all, _)? = events.last else { Issue.record("\(events)"); return }
        #expect(all.map(\.route.key) == ["direct", "obfs4:yours", "snowflake:built-in"])
    }

    @Test func aPassedProbeDoesNotHideAStallThatFailureSignalsShow() {
        var selector = RouteSelector(routes: Self.routes(), strategy: .race)
        _ = selector.start(at: .zero)
        _ = selector.probeFinished(passed(3), forKey: "direct", cycle: 1, at: .milliseconds(3))
        _ = selector.observe(progress: 10, tag: "conn_done", ready: false, at: .milliseconds(200))
        // TCP works, TLS is reset by fingerprint: tor's connections fail towards every relay.
        var events: [AssistEvent] = []
        for (index, relay) in [1, 2, 3].enumerated() {
            events = selector.observe(signal: orconn(relay, "IOERROR"), at: .milliseconds(1200 + 300 * Int64(index)))
        }
        #expect(movedOn(events).first?.reason == .connectionsFailing)
        #expect(movedOn(events).first?.problem == .ioError)
        #expect(trying(events) == "obfs4:yours")
    }

    @Test func theSequentialStrategyIgnoresSignalsAndProbes() {
        var selector = RouteSelector(routes: Self.routes(), strategy: .sequential)
        _ = selector.start(at: .zero)
        for relay in 1...9 { #expect(selector.observe(signal: orconn(relay), at: .seconds(5)).isEmpty) }
        #expect(selector.probeFinished(failed(.timeout), forKey: "direct", cycle: 1, at: .seconds(5)).isEmpty)
        #expect(selector.unprobedKeys.isEmpty)
        #expect(movedOn(selector.tick(at: .seconds(30))).first?.reason == .noProgress)
    }

    // MARK: Memory

    @Test func memoryOrdersByThisNetworkWithDecay() {
        var memory = AssistMemory(salt: String(repeating: "ab", count: 16))
        let home = memory.networkKey(gatewayHardwareAddress: "52:54:00:12:34:56")
        let cafe = memory.networkKey(gatewayHardwareAddress: "52:54:00:aa:bb:cc")
        #expect(home != cafe && home.count == 64 && !home.contains("52:54"))
        #expect(memory.networkKey(gatewayHardwareAddress: nil) == AssistMemory.globalNetwork)
        #expect(AssistMemory(salt: String(repeating: "cd", count: 16)).networkKey(gatewayHardwareAddress: "52:54:00:12:34:56") != home,
                "salted per install")
        let keys = ["direct", "obfs4:yours", "snowflake:built-in"]
        let now = Date(timeIntervalSince1970: 2_000_000_000)
        memory.recordFailure("direct", network: home, now: now)
        memory.recordSuccess("snowflake:built-in", network: home, secondsToReady: 12, now: now)
        #expect(memory.order(keys, network: home, now: now) == ["snowflake:built-in", "obfs4:yours", "direct"])
        #expect(memory.order(keys, network: cafe, now: now) == keys, "another network has its own slot")
        memory.recordSuccess("obfs4:yours", network: home, secondsToReady: 3, now: now)
        #expect(memory.order(keys, network: home, now: now).first == "obfs4:yours", "equal scores: the faster first")
        // A month later the old failure has faded to almost nothing: direct is back among the unknown.
        let later = now.addingTimeInterval(60 * 86_400)
        #expect(abs(memory.score("direct", network: home, now: later)) < 0.01)
        #expect(memory.order(keys, network: home, now: later) == keys)
    }

    @Test func gatewayHardwareAddressComesFromTheRouteAndArpTables() {
        let route = """
        Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
        eth0\t0000A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
        eth0\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0
        """
        let arp = """
        IP address       HW type     Flags       HW address            Mask     Device
        192.168.0.1      0x1         0x2         52:54:00:12:34:56     *        eth0
        """
        #expect(AssistMemory.defaultGatewayHardwareAddress(routeTable: route, arpTable: arp) == "52:54:00:12:34:56")
        #expect(AssistMemory.defaultGatewayHardwareAddress(routeTable: route, arpTable: "IP address HW\n") == nil)
        #expect(AssistMemory.defaultGatewayHardwareAddress(routeTable: "Iface\n", arpTable: arp) == nil)
        #expect(AssistMemory.defaultGatewayHardwareAddress(routeTable: nil, arpTable: arp) == nil)
    }

    @Test func memoryFileIsPrivateAndSurvivesARoundTrip() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("assist-memory-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        var memory = AssistMemory()
        memory.recordSuccess("obfs4:yours", network: "global", secondsToReady: 2.5)
        try memory.write(in: directory)
        let file = directory.appendingPathComponent(AssistMemory.fileName)
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let read = AssistMemory.read(in: directory)
        #expect(read.salt == memory.salt)
        #expect(read.score("obfs4:yours", network: "global") > 0.9)
        try Data("{not json".utf8).write(to: file)
        #expect(AssistMemory.read(in: directory).networks.isEmpty, "an unreadable file is a fresh memory")
    }

    @Test func planFollowsTheMemoryOfThisNetwork() {
        var memory = AssistMemory()
        memory.recordSuccess("snowflake:built-in", network: "global", secondsToReady: 9)
        memory.recordFailure("direct", network: "global")
        let plan = AssistRoutePlan(yours: [Self.obfs4(3)], builtins: [.snowflake: [ConnectionAssistTests.snowflake(6)]],
                                   available: ConnectionAssistTests.available, limits: RouteLimitTable(), lastGood: "obfs4:yours",
                                   memory: memory, network: "global")
        #expect(plan.routes.map(\.key) == ["snowflake:built-in", "obfs4:yours", "direct"])
        #expect(plan.lastGoodFirst)
    }
}

/// The driver with probes: a failed probe of the route being tried, while another route's probe
/// passed, switches tor at once (no window runs out), and the snapshot explains it.
@Suite struct ConnectionAssistantRaceDriverTests {
    actor Applied {
        private(set) var keys: [String] = []
        func append(_ key: String) { keys.append(key) }
    }

    @Test func switchesOnProbeResultsWithoutWaitingForAWindow() async throws {
        let clock = ManualClock()
        let applied = Applied()
        let routes = ConnectionAssistSignalTests.routes()
        let assistant = ConnectionAssistant(routes: routes, tor: TorManager(), clock: clock, tickInterval: .seconds(1),
                                            strategy: .race, probe: { route in
            switch route.key {
            case "direct": ProbeResult(outcome: .failed, milliseconds: 3000, steps: [], peersTried: 2, peersAnswered: 0, problem: .timeout)
            case "obfs4:yours": ProbeResult(outcome: .passed, milliseconds: 40, steps: [], peersTried: 1, peersAnswered: 1)
            default: ProbeResult(outcome: .failed, milliseconds: 20_000, steps: [], peersTried: 1, peersAnswered: 0, problem: .handshake)
            }
        }) { route in await applied.append(route.key) }
        let driver = Task { await assistant.run() }
        defer { driver.cancel() }
        // No time passes: the probes answer at once.
        for _ in 0..<2000 where await applied.keys.count < 2 { try await Task.sleep(for: .milliseconds(1)) }
        #expect(await applied.keys == ["direct", "obfs4:yours"])
        let snapshot = await assistant.snapshot
        #expect(snapshot.strategy == .race)
        #expect(snapshot.attempts.first?.reasonCode == "probe-failed")
        #expect(snapshot.attempts.last?.choice == "probe-passed")
        #expect(Set(snapshot.probes?.map(\.routeKey) ?? []) == ["direct", "obfs4:yours", "snowflake:built-in"])
        driver.cancel()
        await driver.value
    }

    actor Probed {
        private(set) var keys: [String] = []
        func append(_ key: String) { keys.append(key) }
    }

    /// Issue 22 (at most 2 connections to a protocol-blocked obfs4 bridge): the route tor is
    /// applying through an in-process transport is not probed (tor's own dial, in the ledger, is
    /// the evidence); the other routes are. Without the in-process set it is probed, as before.
    @Test func theRouteBeingAppliedInProcessIsNotProbed() async throws {
        let all = ConnectionAssistSignalTests.routes()
        let routes = [all[1], all[2], all[0]]
        for inProcess: Set<TransportName> in [[.obfs4], []] {
            let probed = Probed()
            let assistant = ConnectionAssistant(routes: routes, tor: TorManager(), clock: ManualClock(), tickInterval: .seconds(1),
                                                strategy: .race, probe: { route in
                await probed.append(route.key)
                return ProbeResult(outcome: .failed, milliseconds: 3000, steps: [], peersTried: 1, peersAnswered: 0, problem: .timeout)
            }, flows: FlowLedger(), inProcess: inProcess) { _ in }
            let driver = Task { await assistant.run() }
            let expected = inProcess.isEmpty ? 3 : 2
            for _ in 0..<2000 where await probed.keys.count < expected { try await Task.sleep(for: .milliseconds(1)) }
            try await Task.sleep(for: .milliseconds(50))
            #expect(await assistant.snapshot.routeKey == "obfs4:yours")
            let keys = Set(await probed.keys)
            #expect(keys == (inProcess.isEmpty ? ["obfs4:yours", "snowflake:built-in", "direct"] : ["snowflake:built-in", "direct"]), "\(keys)")
            driver.cancel()
            await driver.value
        }
    }
}
