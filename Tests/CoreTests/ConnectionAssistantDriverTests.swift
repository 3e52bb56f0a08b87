import Foundation
import Synchronization
import Testing
@testable import ConnectionAssist
@testable import PosternTor

/// A clock that moves only when the test says so: sleepers wake when `advance` passes their deadline.
final class ManualClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private let state = Mutex<(now: Instant, sleepers: [UUID: Sleeper])>((Instant(offset: .zero), [:]))

    var now: Instant { state.withLock { $0.now } }
    var minimumResolution: Duration { .nanoseconds(1) }
    var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let id = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLock { state -> Bool in
                    if deadline <= state.now { return true }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
    }

    func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { state.sleepers[id] = nil }
            return Array(due.values)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}

/// The driver with an injected manual clock and a manager whose tor never starts: bootstrap stays
/// at 0%, so every route runs out its window, and time passes only when the test advances it.
@Suite struct ConnectionAssistantDriverTests {
    actor Applied {
        private(set) var keys: [String] = []
        func append(_ key: String) { keys.append(key) }
    }

    /// Advances one tick at a time, waiting each time until the driver sleeps again.
    private func advance(_ clock: ManualClock, seconds: Int) async throws {
        for _ in 0..<seconds {
            try await waitForSleeper(clock)
            clock.advance(by: .seconds(1))
        }
        try await waitForSleeper(clock)
    }

    private func waitForSleeper(_ clock: ManualClock) async throws {
        for _ in 0..<2000 where clock.sleeperCount == 0 { try await Task.sleep(for: .milliseconds(1)) }
        try #require(clock.sleeperCount > 0, "the driver went back to sleep")
    }

    @Test func movesOnByTheInjectedClockAndBacksOffWhenEverythingFailed() async throws {
        let clock = ManualClock()
        let applied = Applied()
        let routes = [AssistRoute.direct(limits: RouteLimits(ceiling: .seconds(10), noProgressWindow: .seconds(2))),
                      AssistRoute(transport: .obfs4, origin: .yours, bridges: [], limits: RouteLimits(ceiling: .seconds(3), noProgressWindow: .seconds(3))),
                      AssistRoute(transport: .snowflake, origin: .builtin, bridges: [], limits: .snowflakeDefault)]
        let assistant = ConnectionAssistant(routes: routes, tor: TorManager(), clock: clock,
                                            tickInterval: .seconds(1)) { route in
            await applied.append(route.key)
            if route.transport == .snowflake { throw TorCoreError(.invalidConfiguration, "no snowflake listener") }
        }
        let driver = Task { await assistant.run() }
        defer { driver.cancel() }

        try await waitForSleeper(clock)
        #expect(await applied.keys == ["direct"])
        #expect(await assistant.snapshot.phase == "trying")
        try await advance(clock, seconds: 1)
        #expect(await applied.keys == ["direct"], "1 s is inside direct's 2 s window")
        try await advance(clock, seconds: 1)
        #expect(await applied.keys == ["direct", "obfs4:yours"])
        try await advance(clock, seconds: 3)
        // obfs4's ceiling passed; snowflake could not be applied and was left at once.
        #expect(await applied.keys == ["direct", "obfs4:yours", "snowflake:built-in"])
        let failed = await assistant.snapshot
        #expect(failed.phase == "waiting" && failed.allFailed)
        #expect(failed.retryInSeconds == 5)
        #expect(failed.attempts.map(\.outcome) == ["moved-on", "moved-on", "moved-on"])
        #expect(failed.attempts.first?.reason == #"stalled at 0% "starting" for 2 s"#)
        #expect(failed.attempts.last?.reason == "could not be used: no snowflake listener")
        try await advance(clock, seconds: 4)
        #expect(await applied.keys.count == 3, "still backing off")
        try await advance(clock, seconds: 1)
        #expect(await applied.keys.last == "direct", "a new pass after 5 s")
        #expect(await assistant.snapshot.cycle == 2)
        driver.cancel()
        await driver.value
    }
}
