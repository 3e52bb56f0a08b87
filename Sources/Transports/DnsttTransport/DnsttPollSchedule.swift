import TurboTunnel

// When the dnstt client sends a query (docs/plans/DNSTT.md §2 "Polling"; the dnstt protocol notes
// §2.4, from dnstt's dnstt-client/dns.go send loop). The server can only answer queries, so the
// client must keep asking even when it has nothing to say:
//
// - every KCP packet becomes one query at once, in order, no pacing; a data query also uses up one
//   pending poll token (it doubles as a poll);
// - with no packet waiting, a pending token sends an empty poll at once; each response that carried
//   at least one packet adds a token (the server may have more), at most 16 held;
// - with neither, an empty poll goes out when the poll timer expires; the timer starts at 500 ms,
//   doubles on every expiry up to 10 s, and any other send (data or a token's poll) resets it to
//   500 ms from that send;
// - packets waiting for a query are capped at 128; one more is dropped (the newest), as the
//   reference's queue drops it: KCP sends it again.
//
// Pure logic on a caller's millisecond clock (wrapping UInt32, compared with `timeDiff`), so the
// schedule is tested on a fake clock.

/// The dnstt client's send and poll schedule (see the top of this file).
package struct DnsttPollSchedule: Sendable {
    package static let initialDelayMs: UInt32 = 500
    package static let maximumDelayMs: UInt32 = 10_000
    package static let tokenLimit = 16
    package static let queueLimit = 128

    /// What to send now.
    package enum Send: Equatable, Sendable {
        /// A query carrying this KCP packet.
        case data([UInt8])
        /// An empty poll.
        case poll
    }

    /// KCP packets waiting for a query, oldest first; at most queueLimit.
    package private(set) var queue: [[UInt8]] = []
    /// Polls owed to responses that carried packets; at most tokenLimit.
    package private(set) var tokens = 0
    /// The timer's current delay.
    package private(set) var delayMs = DnsttPollSchedule.initialDelayMs
    /// When the timer expires.
    package private(set) var timerDeadline: UInt32
    /// Packets dropped because the queue was full.
    package private(set) var droppedPackets = 0

    package init(now: UInt32) {
        timerDeadline = now &+ Self.initialDelayMs
    }

    /// Queues one KCP packet; false when the queue was full and the packet was dropped.
    @discardableResult
    package mutating func enqueue(_ packet: [UInt8]) -> Bool {
        guard queue.count < Self.queueLimit else {
            droppedPackets += 1
            return false
        }
        queue.append(packet)
        return true
    }

    /// A response carried at least one packet: one more poll is owed.
    package mutating func responseCarriedPackets() {
        tokens = min(tokens + 1, Self.tokenLimit)
    }

    /// The next send due at `now`, if any, with the schedule updated as if it had gone out.
    package mutating func next(now: UInt32) -> Send? {
        if !queue.isEmpty {
            let packet = queue.removeFirst()
            if tokens > 0 { tokens -= 1 }
            reset(now: now)
            return .data(packet)
        }
        if tokens > 0 {
            tokens -= 1
            reset(now: now)
            return .poll
        }
        guard timeDiff(now, timerDeadline) >= 0 else { return nil }
        delayMs = min(delayMs * 2, Self.maximumDelayMs)
        timerDeadline = now &+ delayMs
        return .poll
    }

    private mutating func reset(now: UInt32) {
        delayMs = Self.initialDelayMs
        timerDeadline = now &+ delayMs
    }
}
