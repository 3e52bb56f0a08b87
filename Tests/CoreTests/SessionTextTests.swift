import BridgeConfig
import Foundation
import Testing
import TransportBase
@testable import ConnectionAssist
@testable import PosternTor
@testable import PosternRuntime

/// The text forms of a session's events (what `postern run` prints) and the filter that decides
/// which status changes get a line.
@Suite struct SessionTextTests {
    static let direct = AssistRoute.direct()
    static let builtinObfs4 = AssistRoute(transport: .obfs4, origin: .builtin, bridges: [], limits: .obfs4Default)

    static func failure(_ route: AssistRoute, skipped: Bool = false) -> RouteFailure {
        RouteFailure(route: route, reason: .noProgress, progress: 10, tag: "conn_done", duration: .seconds(30), detail: nil, skipped: skipped)
    }

    @Test func eachAssistDecisionHasItsLine() {
        #expect(AssistEvent.trying(Self.direct, position: 1, count: 2, cycle: 1).line(racing: false)
            == "trying direct (route 1 of 2): up to 45 s, moving on after 30 s without progress")
        #expect(AssistEvent.trying(Self.builtinObfs4, position: 2, count: 2, cycle: 3).line(racing: true)
            == "trying bridges (obfs4, built-in) (route 2 of 2, pass 3): up to 120 s, moving on after 90 s without progress, sooner on failing connections or a failed probe")
        let probe = ProbeResult(outcome: .passed, milliseconds: 12.4, steps: [.init(name: "tcp", outcome: .passed, milliseconds: 12)],
                                peersTried: 1, peersAnswered: 1)
        #expect(AssistEvent.probed(Self.direct, probe).line(racing: true) == "probe direct: passed in 12 ms (tcp)")
        #expect(AssistEvent.chose(RouteChoice(route: Self.direct, reason: .probePassed, probe: probe)).line(racing: true)
            == "connection assist: choosing direct: its probe passed in 12 ms (tcp)")
        // A route chosen because it is next needs no line of its own.
        #expect(AssistEvent.chose(RouteChoice(route: Self.direct, reason: .nextInOrder, probe: nil)).line(racing: true) == nil)
        #expect(AssistEvent.movedOn(Self.failure(Self.direct)).line(racing: true)
            == "moving on from direct: stalled at 10% \"conn_done\" for 30 s")
        #expect(AssistEvent.movedOn(Self.failure(Self.direct, skipped: true)).line(racing: true)
            == "passing over direct: stalled at 10% \"conn_done\" for 30 s")
        #expect(AssistEvent.allFailed([Self.failure(Self.direct), Self.failure(Self.builtinObfs4)], retryIn: .seconds(5)).line(racing: true)
            == "stalled: every route failed (direct: stalled at 10% \"conn_done\" for 30 s; bridges (obfs4, built-in): stalled at 10% \"conn_done\" for 30 s); trying them all again in 5 s (tor keeps trying bridges (obfs4, built-in) meanwhile)")
        #expect(AssistEvent.connected(Self.builtinObfs4, after: .milliseconds(12_345)).line(racing: false)
            == "connection assist: connected via bridges (obfs4, built-in) after 12.3 s; it goes first next time")
    }

    /// Issue 22: the diagnosis line, the choice it guides, the move it causes and the verdict that
    /// names what would pass.
    @Test func diagnosesHaveTheirLinesAndTheVerdictNamesWhatWouldPass() {
        let obfs4 = AssistRoute(transport: .obfs4, origin: .commandLine, bridges: [], limits: .obfs4Default)
        let webtunnel = AssistRoute(transport: .webtunnel, origin: .commandLine, bridges: [], limits: .obfs4Default)
        let diagnosis = RouteDiagnosis(technique: .protocolBlock, confidence: .likely,
                                       observed: "reset 31 ms after our first packet, nothing came back, then the address went silent",
                                       meaning: "most likely a block of the obfs4 protocol (fully-encrypted-traffic detection)",
                                       passes: [.vanilla, .snowflake, .webtunnel], rulesOutRoute: true)
        #expect(AssistEvent.diagnosed(obfs4, diagnosis).line(racing: true)
            == "diagnosis bridges (obfs4, command line): reset 31 ms after our first packet, nothing came back, then the address went silent: most likely a block of the obfs4 protocol (fully-encrypted-traffic detection); would pass: vanilla, snowflake, webtunnel")
        #expect(AssistEvent.chose(RouteChoice(route: webtunnel, reason: .passesDiagnosis, probe: nil, diagnosis: diagnosis, diagnosedRoute: obfs4)).line(racing: true)
            == "connection assist: choosing bridges (webtunnel, command line): it should pass the protocol block seen on bridges (obfs4, command line)")
        let left = RouteFailure(route: obfs4, reason: .diagnosed, progress: 5, tag: "conn", duration: .milliseconds(3200), detail: nil, diagnosis: diagnosis)
        #expect(AssistEvent.movedOn(left).line(racing: true) == "moving on from bridges (obfs4, command line): diagnosed: protocol block, after 3.2 s")
        #expect(AssistEvent.allFailed([left], retryIn: .seconds(5)).line(racing: true)
            == "stalled: every route failed (bridges (obfs4, command line): protocol block, likely); none of your routes can pass it here; would pass: vanilla, snowflake, webtunnel bridges ('postern bridges add'); trying them all again in 5 s (tor keeps trying bridges (obfs4, command line) meanwhile)")
    }

    @Test func settingsChangesSayWhatChangedThenTheirNotes() {
        #expect(SettingsChange.nowConnectionAssist.lines
            == ["settings changed: now connection assist; applied to the running tor without a restart"])
        #expect(SettingsChange.nowFixed(route: "bridges (obfs4)", notes: ["n1"]).lines
            == ["settings changed: now bridges (obfs4); applied to the running tor without a restart", "note: n1"])
        #expect(SettingsChange.assistRoutesReplaced(nowTrying: "direct", order: ["direct"], notes: []).lines
            == ["settings changed: now direct (connection assist); applied to the running tor without a restart"])
        #expect(SettingsChange.assistRoutesReplaced(nowTrying: nil, order: ["direct", "bridges (obfs4, yours)"], notes: ["n"]).lines
            == ["settings changed: connection assist now tries direct, bridges (obfs4, yours)", "note: n"])
    }

    @Test func eventsOtherThanStatusHaveTheirLines() {
        #expect(SessionEvent.fixedRoute(route: "direct", notes: ["a", "b"]).lines(racing: true) == ["note: a", "note: b"])
        #expect(SessionEvent.assistStarted(order: ["direct", "bridges (obfs4, built-in)"], probing: true, lastGoodFirst: "direct", notes: ["x"]).lines(racing: true)
            == ["connection assist: trying direct, bridges (obfs4, built-in) in this order, probing them all meanwhile",
                "connection assist: direct goes first: it connected last time", "note: x"])
        #expect(SessionEvent.assistStarted(order: ["direct"], probing: false, lastGoodFirst: nil, notes: []).lines(racing: false)
            == ["connection assist: trying direct in this order"])
        let problem = TransportEvent(kind: .dialFailed, severity: .error, transport: .obfs4, message: "refused")
        #expect(SessionEvent.transportProblem(problem).lines(racing: true) == ["transport: obfs4 dial-failed: refused"])
        #expect(SessionEvent.warning(SessionWarning(.settingsNotApplied, "kept the old settings")).lines(racing: true) == ["kept the old settings"])
        #expect(SessionEvent.assist(.chose(RouteChoice(route: Self.direct, reason: .firstInOrder, probe: nil))).lines(racing: true).isEmpty)
        #expect(SessionEvent.settingsApplied(.nowConnectionAssist).lines(racing: true).count == 1)
    }

    static func tor(_ state: TorState, _ progress: Int, summary: String = "", stalled: Bool = false) -> TorStatus {
        var status = TorStatus()
        status.state = state
        status.bootstrapProgress = progress
        status.bootstrapSummary = summary
        status.bootstrapDidStall = stalled
        return status
    }

    static func session(_ tor: TorStatus, phases: [RunStatusRecord.PhaseTiming] = []) -> SessionStatus {
        SessionStatus(tor: tor, route: "direct", assist: nil, phases: phases, socks: .default, seconds: 4.3)
    }

    @Test func progressBarStallAndReadyLines() {
        #expect(Self.tor(.bootstrapping, 30, summary: "Loading relay descriptors").progressBar()
            == "[#########.....................]  30% Loading relay descriptors")
        #expect(Self.tor(.starting, 0).progressBar(width: 4) == "[....]   0% starting")
        #expect(Self.tor(.ready, 100, summary: "Done").progressBar(width: 4) == "[####] 100% Done")
        // A percentage out of range draws a full or empty bar instead of trapping.
        #expect(Self.tor(.bootstrapping, 250).progressBar(width: 2) == "[##] 250% bootstrapping")
        var stalled = Self.tor(.bootstrapping, 10, summary: "Connecting", stalled: true)
        #expect(stalled.stallLine(deadline: .seconds(75)) == "stalled: no 100% within 75 s (at 10%: Connecting); tor keeps trying")
        stalled.bootstrapWarning = "connection refused"
        #expect(stalled.stallLine(deadline: .milliseconds(2500))
            == "stalled: no 100% within 2.5 s (at 10%: Connecting); last problem: connection refused; tor keeps trying")
        let phases = [RunStatusRecord.PhaseTiming(progress: 5, tag: "conn", summary: "", seconds: 0.5),
                      RunStatusRecord.PhaseTiming(progress: 100, tag: "done", summary: "", seconds: 12.5)]
        let ready = Self.session(Self.tor(.ready, 100), phases: phases)
        #expect(ready.readyLine == "ready: socks5 \(SocksEndpoint.default) (route: direct, 4.3 s)")
        #expect(ready.routeAndTime == "route: direct, 4.3 s")
        #expect(ready.phaseReport == "phase timings (seconds since start):\n    0.50    5%  conn\n   12.50  100%  done")
    }

    @Test func announcerShowsEachChangeOnceReadyOnceAndAStallUntilBootstrapMoves() {
        var announcer = SessionStatusAnnouncer(stallTimeout: .seconds(75))
        let starting = Self.session(Self.tor(.bootstrapping, 10, summary: "Connecting"))
        #expect(announcer.announcement(for: starting) == .progress("[###...........................]  10% Connecting"))
        // The same state, percentage and stall again: nothing new.
        #expect(announcer.announcement(for: starting) == nil)
        let stalled = Self.session(Self.tor(.bootstrapping, 10, summary: "Connecting", stalled: true))
        #expect(announcer.announcement(for: stalled) == .stalled("stalled: no 100% within 75 s (at 10%: Connecting); tor keeps trying"))
        #expect(announcer.announcement(for: Self.session(Self.tor(.stalled, 10, summary: "Connecting", stalled: true))) == nil)
        // Bootstrap moves: a later stall is shown again.
        #expect(announcer.announcement(for: Self.session(Self.tor(.bootstrapping, 20, summary: "Loading")))
            == .progress("[######........................]  20% Loading"))
        #expect(announcer.announcement(for: Self.session(Self.tor(.bootstrapping, 20, summary: "Loading", stalled: true)))
            == .stalled("stalled: no 100% within 75 s (at 20%: Loading); tor keeps trying"))
        let ready = Self.session(Self.tor(.ready, 100, summary: "Done"))
        #expect(announcer.announcement(for: ready)
            == .ready(progressBar: "[##############################] 100% Done", lines: [ready.readyLine, ready.phaseReport]))
        // Ready again after a re-bootstrap: announced only once per session.
        let rebootstrap = announcer.announcement(for: Self.session(Self.tor(.bootstrapping, 90)))
        #expect({ if case .progress? = rebootstrap { true } else { false } }(), "\(String(describing: rebootstrap))")
        #expect(announcer.announcement(for: ready) == nil)
        var failed = Self.tor(.failed, 90)
        #expect(announcer.announcement(for: Self.session(failed)) == .failed("tor failed"))
        failed.lastError = TorCoreError(.torExited, kind: .failure, "tor exited with status 1")
        failed.bootstrapProgress = 91
        #expect(announcer.announcement(for: Self.session(failed)) == .failed("tor exited with status 1"))
        #expect(announcer.announcement(for: Self.session(Self.tor(.stopping, 91))) == nil)
    }

    @Test func isChangeComparesStatePercentageAndStall() {
        var announcer = SessionStatusAnnouncer(stallTimeout: .seconds(75))
        let statuses = [Self.tor(.ready, 100), Self.tor(.ready, 100, summary: "another summary"), Self.tor(.bootstrapping, 100),
                        Self.tor(.bootstrapping, 100, stalled: true), Self.tor(.ready, 100)]
        let changes = statuses.map { announcer.isChange($0) }
        #expect(changes == [true, false, true, true, true])
    }
}
