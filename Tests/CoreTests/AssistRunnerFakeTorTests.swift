import Foundation
import PosternLinkSpec
import Synchronization
import Testing
@testable import ConnectionAssist
@testable import PosternTor

/// A tor for connection assist without a tor: statuses and failure signals come from the test,
/// and each SETCONF assist sends is recorded. Everything else of assist is the real thing.
actor FakeTor: TorControlling {
    struct Reconfiguration: Sendable, Equatable {
        var options: [String]
        var resetting: [String]
    }

    private var status = TorStatus()
    private var statusSubscribers: [AsyncStream<TorStatus>.Continuation] = []
    private var signalSubscribers: [AsyncStream<ConnectionSignal>.Continuation] = []
    private(set) var reconfigurations: [Reconfiguration] = []

    var currentStatus: TorStatus { status }

    func statusUpdates(everyChange: Bool) -> AsyncStream<TorStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: TorStatus.self)
        continuation.yield(status)
        statusSubscribers.append(continuation)
        return stream
    }

    func connectionSignals() -> AsyncStream<ConnectionSignal> {
        let (stream, continuation) = AsyncStream.makeStream(of: ConnectionSignal.self)
        signalSubscribers.append(continuation)
        return stream
    }

    func reconfigure(_ options: [TorOption], resetting: [String]) async throws {
        reconfigurations.append(Reconfiguration(options: options.map { "\($0.key) \($0.value)" }, resetting: resetting))
    }

    var subscribed: Bool { !statusSubscribers.isEmpty && !signalSubscribers.isEmpty }

    func report(progress: Int, tag: String, ready: Bool = false) {
        status.state = ready ? .ready : .bootstrapping
        status.bootstrapProgress = progress
        status.bootstrapTag = tag
        for continuation in statusSubscribers { continuation.yield(status) }
    }

    func signal(_ signal: ConnectionSignal) {
        for continuation in signalSubscribers { continuation.yield(signal) }
    }
}

/// `AssistRunner`, the runner a session uses, against `FakeTor`: routes applied over the control
/// calls, left on tor's failure signals, and the route that reached 100% remembered on disk.
@Suite struct AssistRunnerFakeTorTests {
    final class Notices: Sendable {
        private let list = Mutex<[AssistNotice]>([])
        func append(_ notice: AssistNotice) { list.withLock { $0.append(notice) } }
        var events: [AssistEvent] {
            list.withLock { $0.compactMap { if case .event(let event) = $0 { event } else { nil } } }
        }
        var startedOrder: [RouteName]? {
            list.withLock { $0.lazy.compactMap { if case .started(let order, _, _, _) = $0 { order } else { nil } }.first }
        }
    }

    private func waitUntil(_ what: Comment, _ condition: () async -> Bool) async throws {
        // Generous: under a loaded machine the runner's tasks may start late.
        for _ in 0..<3000 where !(await condition()) { try await Task.sleep(for: .milliseconds(10)) }
        try #require(await condition(), what)
    }

    @Test func leavesARouteOnTorsSignalsAndRemembersTheOneThatReachedReady() async throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("postern-assist-fake-\(UUID())")
        defer { try? FileManager.default.removeItem(at: state) }
        let tor = FakeTor()
        let notices = Notices()
        let bridge = ConnectionAssistTests.obfs4(3)
        let plan = AssistRoutePlan(yours: [bridge], builtins: [:], available: [.obfs4], limits: RouteLimitTable(), lastGood: nil)
        #expect(plan.routes.map(\.key) == ["direct", "obfs4:yours"])
        let runner = AssistRunner(tor: tor, stateDirectory: state, strategy: .race, probes: nil,
                                  routeKeys: ["UseBridges", "Bridge"],
                                  routeOptions: { route in
                                      route.isDirect ? [] : [try TorOption("UseBridges", "1"), try TorOption("Bridge", "obfs4 route-\(route.key)")]
                                  },
                                  notify: { notices.append($0) }, onSnapshot: { _ in })
        await runner.start(plan)
        defer { Task { await runner.stop() } }

        try await waitUntil("direct applied") {
            let subscribed = await tor.subscribed
            let applied = await tor.reconfigurations.count
            return subscribed && applied == 1
        }
        #expect(notices.startedOrder == ["direct", "bridges (obfs4, yours)"])
        #expect(await tor.reconfigurations[0] == .init(options: ["DisableNetwork 0"], resetting: ["UseBridges", "Bridge", "DisableNetwork"]))

        // tor's own failure signals (refused by two relays, three times): direct is left at once,
        // long before its no-progress window. (No progress is reported first: progress forgets
        // the signals before it, and the two streams are not ordered against each other.)
        // Signals in a route's first second are ignored (they come from tearing down the route
        // before), so they are sent after it.
        try await Task.sleep(for: .seconds(2))
        for relay in [1, 2, 1] {
            await tor.signal(ConnectionSignal(source: .orConnection, problem: .refused, peer: "relay\(relay)"))
        }
        try await waitUntil("obfs4 applied") { await tor.reconfigurations.count == 2 }
        #expect(await tor.reconfigurations[1].options == ["UseBridges 1", "Bridge obfs4 route-obfs4:yours", "DisableNetwork 0"])
        // The notices come through the runner's listener, after the route was applied.
        try await waitUntil("direct's move noticed") {
            notices.events.contains { if case .movedOn = $0 { true } else { false } }
        }
        let movedOn = notices.events.compactMap { if case .movedOn(let failure) = $0 { failure } else { nil } }
        #expect(movedOn.map(\.route.key) == ["direct"])
        #expect(movedOn.first?.reason == .connectionsFailing)
        #expect(movedOn.first?.problem == .refused)

        await tor.report(progress: 100, tag: "done", ready: true)
        try await waitUntil("connected") {
            notices.events.contains { if case .connected(let route, _) = $0 { route.key == "obfs4:yours" } else { false } }
        }
        try await waitUntil("last good route written") { AssistFiles.readLastGoodRoute(in: state) == "obfs4:yours" }
        let memory = AssistMemory.read(in: state)
        #expect(memory.networks.values.contains { $0.routes["obfs4:yours"]?.successes ?? 0 > 0 })
        #expect(memory.networks.values.contains { $0.routes["direct"]?.failures ?? 0 > 0 })
        #expect(await tor.reconfigurations.count == 2, "nothing applied after connecting")
        await runner.stop()
    }
}
