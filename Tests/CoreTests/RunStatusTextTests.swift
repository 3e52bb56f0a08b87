import BridgeConfig
import Foundation
import Testing
@testable import ConnectionAssist
@testable import PosternTor
@testable import PosternRuntime

/// The text forms `postern status`, `postern transport` and `postern transport limits` print:
/// a published status, the transport setting, the route limit table.
@Suite struct RunStatusTextTests {
    static func record(assist: AssistSnapshot? = nil, stalled: Bool = false, warning: String? = nil) -> RunStatusRecord {
        var tor = TorStatus()
        tor.state = .bootstrapping
        tor.bootstrapProgress = 40
        tor.bootstrapSummary = "Loading"
        tor.bootstrapDidStall = stalled
        tor.bootstrapWarning = warning
        return RunStatusRecord(pid: 42, status: tor, socks: .default, route: "direct", phases: [], assist: assist)
    }

    static func snapshot(_ phase: String, position: Int? = 2, retry: Double? = nil, lastMove: String? = nil) -> AssistSnapshot {
        AssistSnapshot(phase: phase, route: "bridges (obfs4, yours)", routeKey: "obfs4:yours", position: position,
                       order: ["direct", "bridges (obfs4, yours)"], orderKeys: ["direct", "obfs4:yours"], cycle: 1,
                       allFailed: phase == "waiting", retryInSeconds: retry, lastMove: lastMove, attempts: [])
    }

    @Test func statusTextWithAndWithoutConnectionAssist() throws {
        #expect(Self.record().text == """
            state: bootstrapping
            bootstrap: 40% Loading
            route: direct
            socks: socks5 \(SocksEndpoint.default)
            pid: 42
            """)
        #expect(Self.record(stalled: true, warning: "refused").text.contains(
            "bootstrap: 40% Loading\nstalled: yes (no 100% within the deadline; tor keeps trying)\nlast warning: refused\nroute: direct"))
        let trying = Self.record(assist: Self.snapshot("trying", lastMove: "direct: stalled"))
        #expect(trying.text.contains("""
            bootstrap: 40% Loading
            connection assist: trying bridges (obfs4, yours) (route 2 of 2, pass 1)
            route order: direct, bridges (obfs4, yours)
            last move: direct: stalled
            route: direct
            """))
        let line = try trying.jsonLine()
        #expect(!line.contains("\n"))
        #expect(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] != nil)
    }

    @Test func assistStatusLinesForEachPhase() {
        #expect(Self.snapshot("connected").statusLines.first == "connection assist: connected via bridges (obfs4, yours) (route 2 of 2, pass 1)")
        #expect(Self.snapshot("waiting", position: nil, retry: 4.2).statusLines == [
            "stalled: yes, every route failed; connection assist tries them all again in 5 s (tor keeps trying bridges (obfs4, yours) meanwhile)",
            "route order: direct, bridges (obfs4, yours)",
        ])
        #expect(Self.snapshot("idle", position: nil).statusLines.first == "connection assist: idle")
    }

    @Test func routeLimitListingAndTable() throws {
        var table = RouteLimitTable()
        try table.set(parsingOverride: "direct=20/15")
        try table.set(parsingOverride: "webtunnel=60/40.5")
        #expect(table.listing.map(\.kind) == ["direct", "vanilla", "obfs4", "snowflake", "webtunnel"])
        #expect(table.listing[0] == RouteLimitTable.Listing(kind: "direct", ceilingSeconds: 20, noProgressSeconds: 15, source: "setting"))
        #expect(table.listing[3] == RouteLimitTable.Listing(kind: "snowflake", ceilingSeconds: 300, noProgressSeconds: 120, source: "default"))
        #expect(table.textTable == """
            ROUTE      CEILING  NO-PROGRESS  SOURCE
            direct     20 s     15 s         setting
            vanilla    45 s     30 s         default
            obfs4      120 s    90 s         default
            snowflake  300 s    120 s        default
            webtunnel  60 s     40.5 s       setting
            """)
        #expect(RouteLimits.directDefault.summary == "ceiling 45 s, moves on after 30 s without progress")
    }

    @Test func routeTimeoutOverridesNameWhatIsWrong() {
        var table = RouteLimitTable()
        #expect(throws: TorCoreError(.invalidConfiguration, kind: .usage, "needs KIND=CEILING/WINDOW (e.g. direct=45/30), not 'direct'")) {
            try table.set(parsingOverride: "direct")
        }
        #expect(throws: TorCoreError(.invalidConfiguration, kind: .usage, "bad name=5/4: 'bad name' is not direct or a transport name")) {
            try table.set(parsingOverride: "bad name=5/4")
        }
        #expect(throws: TorCoreError(.invalidConfiguration, kind: .usage,
                                     "direct=5: '5' is not CEILING/WINDOW in seconds (two positive numbers, e.g. 45/30)")) {
            try table.set(parsingOverride: "direct=5")
        }
        #expect(table.overrides.isEmpty)
        // A known transport's name in any case is stored under its canonical name.
        #expect(throws: Never.self) { try table.set(parsingOverride: "OBFS4=10/5") }
        #expect(table.overrides["obfs4"] == RouteLimits(ceiling: .seconds(10), noProgressWindow: .seconds(5)))
    }

    @Test func transportSettingLinesAndJSON() throws {
        var configuration = BridgeConfiguration()
        configuration.transport = .direct
        #expect(TransportSetting(configuration).lines(policy: .safe, lastGoodRoute: "obfs4")
            == ["transport: direct", "Tor connects without bridges (visible to a censor as Tor traffic)."])
        configuration.transport = .auto
        #expect(TransportSetting(configuration).lines(policy: .safe, lastGoodRoute: "obfs4").last == "last good route: obfs4 (tried first)")
        #expect(TransportSetting(configuration).lines(policy: .safe).count == 2)
        configuration.transport = TransportSelection(.obfs4)
        let obfs4 = TransportSetting(configuration)
        #expect(obfs4.enabledBridges == 0)
        #expect(obfs4.lines(policy: .safe)[1].hasPrefix("you have no enabled obfs4 bridges; Postern uses the "))
        #expect(obfs4.unknownTransportWarning(policy: .safe) == nil)
        configuration.torEnabled = false
        configuration.transport = try TransportSelection(validating: "fancy")
        let fancy = TransportSetting(configuration)
        #expect(fancy.lines(policy: .safe) == [
            "transport: fancy",
            "you have no enabled fancy bridges and there are no built-in ones: add some with 'postern bridges add'",
            "note: Tor is off, so no transport is used ('postern tor on' to turn it on)",
        ])
        #expect(fancy.unknownTransportWarning(policy: .safe)?.hasPrefix("warning: fancy is not a transport Postern knows (vanilla, obfs4, ") == true)
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(fancy)) as? [String: Any]
        #expect(json?["transport"] as? String == "fancy")
        #expect(json?["known"] as? Bool == false)
        #expect(json?["enabledBridges"] as? Int == 0)
        #expect(json?["torEnabled"] as? Bool == false)
        configuration.transport = .auto
        let auto = try JSONSerialization.jsonObject(with: JSONEncoder().encode(TransportSetting(configuration))) as? [String: Any]
        // No count for auto: the key is left out, not null.
        #expect(auto.map { Set($0.keys) } == ["transport", "known", "torEnabled"])
        #expect(TransportSetting.name(.auto, policy: .safe) == "auto")
    }

    @Test func torPreferenceText() {
        #expect(TorPreference.text(enabled: true) == "tor: on\n" + TorPreference.onExplanation.joined(separator: "\n"))
        #expect(TorPreference.text(enabled: true).hasSuffix("nothing goes around it (fail-closed)."))
        let off = TorPreference.text(enabled: false, unchanged: true)
        #expect(off.hasPrefix("tor: off (it already was)\nWith Tor off, Postern's app traffic (relay WebSockets, directory fetches) goes DIRECT:"))
        #expect(off.hasSuffix("Turn Tor back on with 'postern tor on'."))
        #expect(off.split(separator: "\n").count == 6)
    }

    @Test func externalTransportsGetANote() throws {
        #expect(try Transports.registry().externalTransportNotes.isEmpty)
        // The plugin's process starts when a bridge first needs it, so building the registry runs nothing.
        let plugin = try TransportPlugin(names: [.meekLite], executable: "/nonexistent/meek-client")
        #expect(try Transports.registry(plugins: [plugin]).externalTransportNotes
            == ["note: meek_lite bridges go through the external plugin meek_lite (/nonexistent/meek-client), started when first needed"])
    }
}
