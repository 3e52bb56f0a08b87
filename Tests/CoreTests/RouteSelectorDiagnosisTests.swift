import BridgeConfig
import Foundation
import PosternLinkSpec
import PosternRuntime
import Testing
@testable import ConnectionAssist
@testable import PosternTor
import TransportBase

/// Issue 22: the selector fed with ``CensorReader``'s diagnoses at made-up times (no clock, no
/// tor), and the assignment of flows to routes that the evidence is built from.
@Suite struct RouteSelectorDiagnosisTests {
    static func webtunnel(_ host: Int) -> BridgeLine {
        try! BridgeLine(validating: "webtunnel 192.0.2.\(host):443 \(String(repeating: "C", count: 39))\(host % 10) url=https://example.com/path",
                        rules: Transports.argumentRules)
    }

    /// obfs4 first, then snowflake, webtunnel, vanilla: the order of a pass.
    static func routes() -> [AssistRoute] {
        [AssistRoute(transport: .obfs4, origin: .commandLine, bridges: [ConnectionAssistTests.obfs4(3)], limits: .obfs4Default),
         AssistRoute(transport: .obfs4, origin: .builtin, bridges: [ConnectionAssistTests.obfs4(4)], limits: .obfs4Default),
         AssistRoute(transport: .snowflake, origin: .builtin, bridges: [ConnectionAssistTests.snowflake(6)], limits: .snowflakeDefault),
         AssistRoute(transport: .webtunnel, origin: .commandLine, bridges: [webtunnel(7)], limits: .obfs4Default)]
    }

    static let protocolBlock = RouteDiagnosis(
        technique: .protocolBlock, confidence: .likely,
        observed: "reset 31 ms after our first packet, nothing came back, then the address went silent",
        meaning: "most likely a block of the obfs4 protocol (fully-encrypted-traffic detection)",
        passes: [.vanilla, .snowflake, .webtunnel], rulesOutRoute: true)

    private func trying(_ events: [AssistEvent]) -> String? {
        for case .trying(let route, _, _, _) in events { return route.key }
        return nil
    }

    private func movedOn(_ events: [AssistEvent]) -> [RouteFailure] {
        events.compactMap { if case .movedOn(let failure) = $0 { failure } else { nil } }
    }

    private func choice(_ events: [AssistEvent]) -> RouteChoice? {
        for case .chose(let choice) in events { return choice }
        return nil
    }

    @Test func aDiagnosisThatRulesTheRouteOutLeavesItAtOnceForARouteThatPasses() throws {
        let routes = Self.routes()
        var selector = RouteSelector(routes: routes, strategy: .race)
        #expect(trying(selector.start(at: .zero)) == "obfs4:command line")
        let events = selector.observe(diagnosis: Self.protocolBlock, route: routes[0], at: .milliseconds(3200))
        guard case .diagnosed(let route, let diagnosis)? = events.first else { Issue.record("\(events)"); return }
        #expect(route.key == "obfs4:command line" && diagnosis.technique == .protocolBlock)
        let left = try #require(movedOn(events).first)
        #expect(left.reason == .diagnosed)
        #expect(left.description == "diagnosed: protocol block, after 3.2 s")
        // The other obfs4 route does not pass a protocol block: snowflake, next in order among those that do.
        #expect(trying(events) == "snowflake:built-in")
        let chosen = try #require(choice(events))
        #expect(chosen.reason == .passesDiagnosis)
        #expect(chosen.description == "it should pass the protocol block seen on bridges (obfs4, command line)")
        // The same conclusion with other numbers is not news.
        let again = RouteDiagnosis(technique: .protocolBlock, confidence: .likely, observed: "reset 40 ms after our first packet",
                                   meaning: "", passes: [.snowflake], rulesOutRoute: true)
        #expect(selector.observe(diagnosis: again, route: routes[0], at: .seconds(5)).isEmpty)
    }

    @Test func aRoutePassingTheDiagnosisGoesBeforeAnEarlierOneAndAProbePassFirstAmongThem() {
        let routes = Self.routes()
        var selector = RouteSelector(routes: routes, strategy: .race)
        _ = selector.start(at: .zero)
        _ = selector.probeFinished(ProbeResult(outcome: .passed, milliseconds: 5, steps: [], peersTried: 1, peersAnswered: 1),
                                   forKey: "webtunnel:command line", cycle: 1, at: .seconds(1))
        let events = selector.observe(diagnosis: Self.protocolBlock, route: routes[0], at: .seconds(2))
        #expect(trying(events) == "webtunnel:command line")
    }

    @Test func aRouteRuledOutBeforeItsTurnIsPassedOverAndTheVerdictComesAtOnce() throws {
        let obfs4 = AssistRoute(transport: .obfs4, origin: .commandLine, bridges: [ConnectionAssistTests.obfs4(3)], limits: .obfs4Default)
        let vanilla = AssistRoute(transport: .vanilla, origin: .commandLine, bridges: [ConnectionAssistTests.vanilla(5)], limits: .obfs4Default)
        var selector = RouteSelector(routes: [vanilla, obfs4], strategy: .race)
        #expect(trying(selector.start(at: .zero)) == "vanilla:command line")
        // obfs4 diagnosed while vanilla is tried (from its probe): reported, nothing left yet.
        let diagnosed = selector.observe(diagnosis: Self.protocolBlock, route: obfs4, at: .seconds(4))
        #expect(diagnosed.count == 1)
        // vanilla fails: obfs4 is passed over, and every route of the pass has failed at once.
        let events = selector.routeUnavailable("test", at: .seconds(5))
        let failures = movedOn(events)
        #expect(failures.map(\.route.key) == ["vanilla:command line", "obfs4:command line"])
        #expect(failures.last?.skipped == true && failures.last?.reason == .diagnosed)
        #expect(failures.last?.description == "not tried: diagnosed: protocol block")
        guard case .allFailed(let all, _)? = events.last else { Issue.record("\(events)"); return }
        #expect(all.count == 2)
        // A new pass does not start on the route still ruled out.
        let next = selector.tick(at: .seconds(400))
        #expect(trying(next) == "vanilla:command line")
    }

    @Test func aDiagnosisThatDoesNotRuleOutOnlyReportsAndSequentialNeverLeaves() {
        let routes = Self.routes()
        var selector = RouteSelector(routes: routes, strategy: .race)
        _ = selector.start(at: .zero)
        let inconclusive = RouteDiagnosis(technique: .inconclusive, confidence: .likely, observed: "reset; the address still answers",
                                          meaning: "", passes: [], rulesOutRoute: false)
        let events = selector.observe(diagnosis: inconclusive, route: routes[0], at: .seconds(2))
        #expect(events.count == 1 && movedOn(events).isEmpty)

        var sequential = RouteSelector(routes: routes, strategy: .sequential)
        _ = sequential.start(at: .zero)
        let reported = sequential.observe(diagnosis: Self.protocolBlock, route: routes[0], at: .seconds(2))
        #expect(reported.count == 1 && movedOn(reported).isEmpty, "sequential is the baseline: it reports, never acts")
    }

    @Test func aRuledOutRouteReturnsAfterTheDiagnosisStopsHolding() {
        let routes = Self.routes()
        var selector = RouteSelector(routes: routes, backoff: .init(initial: .seconds(1)), strategy: .race)
        _ = selector.start(at: .zero)
        _ = selector.observe(diagnosis: Self.protocolBlock, route: routes[0], at: .seconds(1))
        #expect(selector.currentRoute?.key == "snowflake:built-in")
        // Long after: a new diagnosis-free pass starts with the first route again.
        for key in ["snowflake:built-in", "webtunnel:command line", "obfs4:built-in"] where selector.currentRoute?.key == key {
            _ = selector.routeUnavailable("test", at: .seconds(2))
        }
        let pass = selector.tick(at: RouteDiagnosis.holds + .seconds(10))
        #expect(trying(pass) == "obfs4:command line")
    }

    // MARK: Evidence

    private func flow(_ peer: TransportEndpoint, origin: FlowOrigin, connected: Bool) -> FlowReport {
        let counts = FlowCounts(started: ContinuousClock.now, bytesSent: 0, bytesReceived: 0, connectedAfter: connected ? .milliseconds(5) : nil,
                                firstWriteAfter: nil, lastWriteAfter: nil, lastReadAfter: nil, age: .milliseconds(10))
        return FlowReport(peer: peer, origin: origin, throughProxy: false, counts: counts, error: nil, isOpen: false, endedByPeer: false)
    }

    @Test func flowsGoToTheirRouteByAddressThenByTransportTag() throws {
        let routes = Self.routes()
        let addresses = RouteEvidence.addresses(of: routes)
        let obfs4Peer = try TransportEndpoint(parsing: ConnectionAssistTests.obfs4(4).address.description)
        #expect(RouteEvidence.routeKey(of: flow(obfs4Peer, origin: .probe, connected: true), routes: routes, addresses: addresses,
                                       current: routes[0]) == "obfs4:built-in")
        // webtunnel dials its URL's host, not the line's address: the tag says whose it is.
        let webHost = try TransportEndpoint(parsing: "198.51.100.9:443")
        #expect(RouteEvidence.routeKey(of: flow(webHost, origin: .transport(.webtunnel), connected: true), routes: routes,
                                       addresses: addresses, current: routes[0]) == "webtunnel:command line")
        #expect(RouteEvidence.routeKey(of: flow(webHost, origin: .probe, connected: true), routes: routes, addresses: addresses,
                                       current: routes[0]) == nil)
        // Another route's connection that completed: the network is up for this one's evidence.
        let evidence = RouteEvidence.assemble(routes: routes, current: routes[0],
                                              flows: [flow(obfs4Peer, origin: .transport(.obfs4), connected: false),
                                                      flow(webHost, origin: .probe, connected: true)],
                                              dialErrors: [:], confirmations: [:], probesPassed: [], connectedRoute: nil)
        #expect(evidence["obfs4:built-in"]?.otherRouteAnswered == true)
        #expect(evidence["obfs4:built-in"]?.firstPacketIsTLS == false)
        #expect(evidence["snowflake:built-in"] == nil)
        #expect(FlowOrigin.transport(.webtunnel).transportName == .webtunnel && FlowOrigin.probe.transportName == nil)
    }

    /// How long tor's bootstrap has stood still reaches the evidence of the route being tried, and
    /// only that route's: tor waits on no other.
    @Test func theBootstrapsStillnessGoesToTheRouteBeingTried() throws {
        let routes = Self.routes()
        var selector = RouteSelector(routes: routes)
        #expect(selector.withoutProgress(at: .seconds(1)) == nil, "nothing tried yet")
        _ = selector.start(at: .seconds(1), progress: 0)
        _ = selector.observe(progress: 25, tag: "requesting_status", ready: false, at: .seconds(2))
        #expect(selector.withoutProgress(at: .seconds(9)) == .seconds(7))
        _ = selector.observe(progress: 25, tag: "requesting_status", ready: false, at: .seconds(10))
        #expect(selector.withoutProgress(at: .seconds(11)) == .seconds(9), "the same percentage is no progress")
        let current = try #require(selector.currentRoute)
        let peer = try TransportEndpoint(parsing: ConnectionAssistTests.obfs4(3).address.description)
        let other = try TransportEndpoint(parsing: ConnectionAssistTests.obfs4(4).address.description)
        let evidence = RouteEvidence.assemble(routes: routes, current: current,
                                              flows: [flow(peer, origin: .transport(.obfs4), connected: true),
                                                      flow(other, origin: .probe, connected: true)],
                                              dialErrors: [:], confirmations: [:], probesPassed: [], connectedRoute: nil,
                                              currentWithoutProgress: selector.withoutProgress(at: .seconds(11)))
        #expect(evidence[current.key]?.torWithoutProgress == .seconds(9))
        #expect(evidence["obfs4:built-in"] != nil && evidence["obfs4:built-in"]?.torWithoutProgress == nil)
        _ = selector.observe(progress: 100, tag: "done", ready: true, at: .seconds(12))
        #expect(selector.withoutProgress(at: .seconds(20)) == nil, "connected: tor waits on nothing")
    }
}
