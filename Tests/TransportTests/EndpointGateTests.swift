import Synchronization
import Testing
@testable import TransportBase

/// The per-ip:port connection discipline (issue #22, "a small footprint";
/// docs/plans/CENSOR-AWARE-ASSIST.md §3) on a manual clock: a sleep moves the clock by exactly what
/// was asked and records it, so the tests read the waits the gate imposed without waiting.
@Suite struct EndpointGateTests {
    final class ManualTiming: Sendable {
        private let state = Mutex<(now: Duration, sleeps: [Duration])>((.zero, []))
        var sleeps: [Duration] { state.withLock { $0.sleeps } }
        func advance(_ duration: Duration) { state.withLock { $0.now += duration } }
        var timing: EndpointGate.Timing {
            EndpointGate.Timing(now: { self.state.withLock { $0.now } },
                                sleep: { duration in self.state.withLock { $0.now += duration; $0.sleeps.append(duration) } })
        }
    }

    private let bridge = try! TransportEndpoint(parsing: "192.0.2.7:443")
    private let other = try! TransportEndpoint(parsing: "192.0.2.8:443")

    private func code(_ body: () async throws -> Void) async -> String? {
        do {
            try await body()
            return nil
        } catch let error as TransportError {
            return error.code.rawValue
        } catch {
            return "\(error)"
        }
    }

    @Test func twoAtOnceThenOneEveryHalfSecond() async throws {
        let clock = ManualTiming()
        let gate = EndpointGate(timing: clock.timing)
        for _ in 0..<4 { _ = try await gate.admit(bridge, as: .dial) }
        // Two tokens at once, then each connect waited for a token refilled at 2/s.
        #expect(clock.sleeps == [.milliseconds(500), .milliseconds(500)])
        // Another ip:port has its own bucket.
        _ = try await gate.admit(other, as: .dial)
        #expect(clock.sleeps.count == 2)
        // After a quiet second the bucket is full again (2, not more).
        clock.advance(.seconds(5))
        _ = try await gate.admit(bridge, as: .dial)
        _ = try await gate.admit(bridge, as: .dial)
        #expect(clock.sleeps.count == 2)
        _ = try await gate.admit(bridge, as: .dial)
        #expect(clock.sleeps.count == 3)
    }

    @Test func neverMoreThanTheCensorsBucketInAnySecond() async throws {
        // The bed's burst censor (K = 3) is a bucket of 3 refilled at 3/s; the gate's must keep
        // inside it for any arrival pattern: 20 connects, each as soon as it may.
        let clock = ManualTiming()
        let gate = EndpointGate(timing: clock.timing)
        var times: [Duration] = []
        for _ in 0..<20 {
            _ = try await gate.admit(bridge, as: .dial)
            times.append(clock.timing.now())
        }
        var censorTokens = 3.0, last = Duration.zero
        for time in times {
            censorTokens = min(3, censorTokens + Double((time - last).components.seconds) * 3
                + Double((time - last).components.attoseconds) / 1e18 * 3)
            last = time
            #expect(censorTokens >= 1, "the censor's bucket ran dry at \(time)")
            censorTokens -= 1
        }
    }

    @Test func aConnectThatWouldWaitLongerThanASecondIsHeldBack() async throws {
        // Connects arriving at the same instant (the clock does not move while they wait) reserve
        // tokens ahead: 0, 0, 0.5 and 1.0 s of waiting; a fifth would wait 1.5 s and is held back.
        let waits = Mutex<[Duration]>([])
        let gate = EndpointGate(timing: EndpointGate.Timing(now: { .zero }, sleep: { wait in waits.withLock { $0.append(wait) } }))
        for _ in 0..<4 { _ = try await gate.admit(bridge, as: .dial) }
        #expect(waits.withLock { $0 } == [.milliseconds(500), .seconds(1)])
        #expect(await code { _ = try await gate.admit(bridge, as: .dial) } == "held-back")
        #expect(gate.inFlight(bridge, .dial) == 4)
    }

    @Test func oneProbePerAddressAndNoneWhileADialIsOpen() async throws {
        let clock = ManualTiming()
        let gate = EndpointGate(timing: clock.timing)
        let probe = try await gate.admit(bridge, as: .probe)
        #expect(await code { _ = try await gate.admit(bridge, as: .probe) } == "endpoint-busy")
        // A dial is not held up by a probe.
        let dial = try await gate.admit(bridge, as: .dial)
        probe.release()
        probe.release()  // a second release changes nothing
        #expect(gate.inFlight(bridge, .probe) == 0)
        #expect(await code { _ = try await gate.admit(bridge, as: .probe) } == "endpoint-busy")
        dial.release()
        clock.advance(.seconds(2))
        let again = try await gate.admit(bridge, as: .probe)
        #expect(gate.inFlight(bridge, .probe) == 1)
        again.release()
    }

    @Test func aHeldAddressRefusesUntilTheHoldEnds() async throws {
        let clock = ManualTiming()
        let gate = EndpointGate(timing: clock.timing)
        gate.hold(bridge, for: .seconds(200))
        #expect(gate.isHeld(bridge))
        #expect(await code { _ = try await gate.admit(bridge, as: .dial) } == "held-back")
        #expect(await code { _ = try await gate.admit(bridge, as: .probe) } == "held-back")
        _ = try await gate.admit(other, as: .dial)
        // A shorter hold does not shorten it.
        gate.hold(bridge, for: .seconds(10))
        clock.advance(.seconds(199))
        #expect(await code { _ = try await gate.admit(bridge, as: .dial) } == "held-back")
        clock.advance(.seconds(1))
        #expect(!gate.isHeld(bridge))
        _ = try await gate.admit(bridge, as: .dial)
    }

    @Test func theHostsOwnAddressIsNotGated() async throws {
        let clock = ManualTiming()
        let gate = EndpointGate(timing: clock.timing)
        let local = try TransportEndpoint(parsing: "127.0.0.1:9")
        gate.hold(local, for: .seconds(60))
        for _ in 0..<10 { _ = try await gate.admit(local, as: .probe) }
        #expect(clock.sleeps.isEmpty)
        // The test bed's nodes (127.0.x.y) are gated like any bridge.
        let node = try TransportEndpoint(parsing: "127.0.3.2:5100")
        _ = try await gate.admit(node, as: .probe)
        #expect(await code { _ = try await gate.admit(node, as: .probe) } == "endpoint-busy")
    }

    @Test func aCancelledWaitGivesItsTokenBack() async throws {
        let gate = EndpointGate(timing: EndpointGate.Timing(now: { .zero }, sleep: { _ in throw CancellationError() }))
        _ = try await gate.admit(bridge, as: .dial)
        _ = try await gate.admit(bridge, as: .dial)
        #expect(await code { _ = try await gate.admit(bridge, as: .dial) } == "cancelled")
        #expect(gate.inFlight(bridge, .dial) == 2)
        #expect(await code { _ = try await gate.admit(bridge, as: .dial) } == "cancelled")
    }

    /// Through a real dialer: a held ip:port is refused before any socket is opened (a closed
    /// port on 127.0.0.2 would otherwise answer "connection-refused"), and a socket's close frees
    /// its probe place.
    @Test func theDialerPassesTheGate() async throws {
        let clock = ManualTiming()
        let gate = EndpointGate(timing: clock.timing)
        let closed = try TransportEndpoint(parsing: "127.0.0.2:9")
        let dialer = OutboundDialer.direct.gated(by: gate)
        #expect(await code { _ = try await dialer.connect(to: closed, timeout: .seconds(2)) } == "connection-refused")
        #expect(gate.inFlight(closed, .dial) == 0)
        gate.hold(closed, for: .seconds(30))
        #expect(await code { _ = try await dialer.connect(to: closed, timeout: .seconds(2)) } == "held-back")

        let listener = try LoopbackListener(loopbackAddress: TransportEndpoint(ipv4: [127, 0, 0, 2], port: 0))
        let open = try TransportEndpoint(parsing: "127.0.0.2:\(listener.port)")
        let ledger = FlowLedger()
        let prober = OutboundDialer.direct.gated(by: gate).reporting(to: ledger, as: .probe)
        let socket = try await prober.connect(to: open, timeout: .seconds(2))
        #expect(gate.inFlight(open, .probe) == 1)
        #expect(await code { _ = try await prober.connect(to: open, timeout: .seconds(2)) } == "endpoint-busy")
        socket.close()
        #expect(gate.inFlight(open, .probe) == 0)
        clock.advance(.seconds(1))
        try await prober.connect(to: open, timeout: .seconds(2)).close()
        listener.close()
    }
}
