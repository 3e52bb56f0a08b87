import PosternSystem
import Synchronization

/// Postern's connection discipline per server ip:port (issue #22, "a small footprint"): whatever
/// opens the connections (tor's dials through a transport, connection assist's probes and confirm
/// connects), a censor that watches connection counts sees no burst and no extra evidence.
///
/// - A token bucket per ip:port: ``Policy/tokens`` new connections at once, refilled at
///   ``Policy/refillPerSecond``. Both sit below the bursts a censor is known to block on (the
///   "Siberian block", net4people/bbs#603; the test bed's `burst` censor at K = 3 per second,
///   scripts/testbed-censors). A connect that finds the bucket empty waits for its token, at most
///   ``Policy/maxWait``; one that would wait longer is refused locally (`held-back`).
/// - At most one probe or confirm connection per ip:port in flight, and none while a transport's
///   dial to it is open: tor's own connection is the evidence then (`endpoint-busy`).
/// - An ip:port flagged by the caller (a protocol block, a burst block) refuses every new
///   connection locally until the flag expires (`held-back`): no SYN leaves, so tor's retries to
///   it cost nothing on the wire.
///
/// The host's own addresses (127.0.0.1, ::1) pass untouched: no censor sits between a process and
/// its own host, and local peers (a pluggable transport's server, tests' listeners) take many
/// connections in a burst by design. The test bed's nodes have addresses of their own (127.0.x.y),
/// so they are gated as a remote bridge is.
///
/// Process-wide (``shared``): the censor counts connections from the host, whichever part of
/// Postern opens them. Memory is bounded: at most ``capacity`` ip:ports are tracked; idle ones
/// (full bucket, nothing in flight, no flag) are forgotten first, and when every tracked one is
/// busy a new ip:port is refused (`held-back`) rather than growing the table.
public final class EndpointGate: Sendable {
    public struct Policy: Sendable {
        /// New connections an ip:port takes at once.
        public var tokens: Int = 2
        /// Tokens added back per second.
        public var refillPerSecond: Int = 2
        /// The longest a connect waits for its token.
        public var maxWait: Duration = .seconds(1)
        public init() {}
    }

    /// Time as an offset from an arbitrary start, and a sleep: injected so that tests run on a
    /// manual clock.
    public struct Timing: Sendable {
        public let now: @Sendable () -> Duration
        public let sleep: @Sendable (Duration) async throws -> Void
        public init(now: @Sendable @escaping () -> Duration, sleep: @Sendable @escaping (Duration) async throws -> Void) {
            self.now = now
            self.sleep = sleep
        }

        public static var continuous: Timing {
            let clock = ContinuousClock()
            let start = clock.now
            return Timing(now: { start.duration(to: clock.now) }, sleep: { try await clock.sleep(for: $0) })
        }
    }

    /// What a connection is to the gate.
    public enum Role: Sendable {
        /// tor's dial through a transport (or any connection that carries traffic).
        case dial
        /// A probe or confirm connection: evidence gathering, never more than one per ip:port.
        case probe
    }

    public static let capacity = 4096
    public static let shared = EndpointGate()

    private struct Entry {
        /// May go below zero: connects waiting for their token reserve it in advance.
        var tokens: Double
        var refilledAt: Duration
        var probes = 0
        var dials = 0
        var flaggedUntil: Duration?

        func idle(at now: Duration, policy: Policy) -> Bool {
            probes == 0 && dials == 0 && (flaggedUntil.map { $0 <= now } ?? true)
                && tokens + (now - refilledAt).gateSeconds * Double(policy.refillPerSecond) >= Double(policy.tokens)
        }
    }

    private let policy: Policy
    private let timing: Timing
    private let entries = Mutex<[TransportEndpoint: Entry]>([:])

    public init(policy: Policy = Policy(), timing: Timing = .continuous) {
        self.policy = policy
        self.timing = timing
    }

    /// A connection's place: ``release()`` (once; later calls do nothing) when it ends.
    public final class Pass: Sendable {
        private let onRelease: (@Sendable () -> Void)?
        private let released = Atomic<Bool>(false)
        init(onRelease: (@Sendable () -> Void)?) { self.onRelease = onRelease }
        public func release() {
            guard released.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
            onRelease?()
        }
    }

    /// Waits for `endpoint`'s token (at most ``Policy/maxWait``) and returns the connection's
    /// pass; throws `held-back` (flagged, or the wait would be longer) or `endpoint-busy` (a probe
    /// while another probe or a dial to the same ip:port is open) without any connection made.
    public func admit(_ endpoint: TransportEndpoint, as role: Role) async throws -> Pass {
        if Self.isOwnHost(endpoint) { return Pass(onRelease: nil) }
        let now = timing.now()
        let wait = try entries.withLock { entries throws(TransportError) -> Duration in
            if entries[endpoint] == nil {
                if entries.count >= Self.capacity {
                    for (key, entry) in entries where entry.idle(at: now, policy: policy) { entries[key] = nil }
                }
                guard entries.count < Self.capacity else {
                    throw TransportError(code: .heldBack, kind: .cancelled, message: "too many addresses in flight; connection held back")
                }
                entries[endpoint] = Entry(tokens: Double(policy.tokens), refilledAt: now)
            }
            var entry = entries[endpoint]!
            if let until = entry.flaggedUntil {
                if until > now {
                    throw TransportError(code: .heldBack, kind: .cancelled,
                                         message: "connection held back: this address is paused for \(Self.text(until - now))")
                }
                entry.flaggedUntil = nil
            }
            if role == .probe, entry.probes > 0 || entry.dials > 0 {
                entries[endpoint] = entry
                throw TransportError(code: .endpointBusy, kind: .cancelled,
                                     message: entry.dials > 0 ? "a dial to this address is in flight; no probe" : "a probe of this address is in flight")
            }
            let rate = Double(policy.refillPerSecond)
            entry.tokens = min(Double(policy.tokens), entry.tokens + (now - entry.refilledAt).gateSeconds * rate)
            entry.refilledAt = now
            let wait: Duration = entry.tokens >= 1 ? .zero : .seconds((1 - entry.tokens) / rate)
            guard wait <= policy.maxWait else {
                entries[endpoint] = entry
                throw TransportError(code: .heldBack, kind: .cancelled,
                                     message: "connection held back: too many connections to this address in the last second")
            }
            entry.tokens -= 1
            switch role {
            case .probe: entry.probes += 1
            case .dial: entry.dials += 1
            }
            entries[endpoint] = entry
            return wait
        }
        let pass = Pass(onRelease: { [self] in self.finish(endpoint, role: role) })
        if wait > .zero {
            do {
                try await timing.sleep(wait)
            } catch {
                // The reserved token goes back: no connection was made with it.
                entries.withLock { entries in entries[endpoint]?.tokens += 1 }
                pass.release()
                throw TransportError(code: .cancelled, kind: .cancelled, message: "cancelled while waiting to connect")
            }
        }
        return pass
    }

    /// Refuses new connections to `endpoint` for `duration` (an existing flag is only extended).
    public func hold(_ endpoint: TransportEndpoint, for duration: Duration) {
        if Self.isOwnHost(endpoint) { return }
        let now = timing.now()
        entries.withLock { entries in
            if entries[endpoint] == nil, entries.count >= Self.capacity {
                for (key, entry) in entries where entry.idle(at: now, policy: policy) { entries[key] = nil }
                // Still full of busy addresses: the flag is dropped rather than the table grown.
                guard entries.count < Self.capacity else { return }
            }
            var entry = entries[endpoint] ?? Entry(tokens: Double(policy.tokens), refilledAt: now)
            entry.flaggedUntil = max(entry.flaggedUntil ?? now, now + duration)
            entries[endpoint] = entry
        }
    }

    /// True while `endpoint` is flagged.
    public func isHeld(_ endpoint: TransportEndpoint) -> Bool {
        let now = timing.now()
        return entries.withLock { $0[endpoint]?.flaggedUntil.map { $0 > now } ?? false }
    }

    /// Dials (`.dial`) or probes (`.probe`) to `endpoint` in flight now.
    public func inFlight(_ endpoint: TransportEndpoint, _ role: Role) -> Int {
        entries.withLock { entries in
            guard let entry = entries[endpoint] else { return 0 }
            return role == .probe ? entry.probes : entry.dials
        }
    }

    private func finish(_ endpoint: TransportEndpoint, role: Role) {
        entries.withLock { entries in
            guard var entry = entries[endpoint] else { return }
            switch role {
            case .probe: entry.probes = max(0, entry.probes - 1)
            case .dial: entry.dials = max(0, entry.dials - 1)
            }
            entries[endpoint] = entry
        }
    }

    static func isOwnHost(_ endpoint: TransportEndpoint) -> Bool {
        endpoint.addressBytes == [127, 0, 0, 1] || endpoint.addressBytes == [UInt8](repeating: 0, count: 15) + [1]
    }

    private static func text(_ duration: Duration) -> String {
        "\(Int((duration.gateSeconds).rounded(.up))) s"
    }
}

extension Duration {
    /// Seconds as a Double (sub-nanosecond precision is not needed here).
    fileprivate var gateSeconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}

extension TransportError.Code {
    /// The connection was not made: its ip:port is paused (flagged) or took its share of
    /// connections for now (``EndpointGate``). Postern's own restraint, never a censor's evidence.
    public static let heldBack = Self(rawValue: "held-back")
    /// A probe was not made: another probe or a dial to the same ip:port is in flight.
    public static let endpointBusy = Self(rawValue: "endpoint-busy")
}
