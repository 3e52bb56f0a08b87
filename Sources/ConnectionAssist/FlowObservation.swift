import TransportBase

/// What the network did to one connection, worded as seen, never as a cause we cannot know
/// (docs/plans/CENSOR-AWARE-ASSIST.md, section 2). Made from a ``FlowReport`` (or a transport's
/// typed dial error) by ``FlowObservation/init(_:)``; ``CensorReader`` weighs several of them.
public struct FlowObservation: Sendable, Hashable, CustomStringConvertible {
    /// An open set of observation kinds; the raw values appear in `--json`.
    public struct Kind: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// ECONNREFUSED at connect: a closed port, or a censor answering for it.
        public static let refused = Kind(rawValue: "refused")
        /// No SYN-ACK within the connect deadline.
        public static let silentConnect = Kind(rawValue: "silent-connect")
        /// Connected, our first data went out, nothing came back, then a reset within a few seconds.
        public static let resetAfterFirstPacket = Kind(rawValue: "reset-after-first-packet")
        /// Connected, our first data went out, and no byte came back before we gave up.
        public static let silentAfterFirstPacket = Kind(rawValue: "silent-after-first-packet")
        /// Some KB came, then nothing for a long while on a connection that stayed open.
        public static let stoppedAfterBytes = Kind(rawValue: "stopped-after-bytes")
        /// A reset after the peer had sent data.
        public static let resetAfterBytes = Kind(rawValue: "reset-after-bytes")
        /// Data kept coming, slowly.
        public static let slow = Kind(rawValue: "slow")
        /// Nothing unusual: it carried data, or it is too young to say.
        public static let unremarkable = Kind(rawValue: "unremarkable")
    }

    public let kind: Kind
    /// The words for people: what was observed, with the numbers.
    public let observed: String
    /// Bytes the peer sent (for a freeze: where data stopped).
    public let bytesReceived: Int

    public var description: String { observed }

    /// Thresholds, stated once (the plan's table). A reset this soon after our first packet, with
    /// nothing back, is what a protocol classifier's reset looks like (fet: 25–40 ms in the bed).
    public static let resetWindow: Duration = .seconds(2)
    /// Our handshake deadlines are 3 s or more: silence this long after the first packet counts.
    public static let silenceAfterFirstPacket: Duration = .seconds(3)
    /// A freeze: between these many bytes received, then no byte for `stallAfter` while we kept
    /// writing or tor, bootstrapping, waited on the connection.
    public static let freezeBytes = 4 * 1024...64 * 1024
    public static let stallAfter = FlowThresholds.stallAfter
    /// Slow: at least this much over at least `slowSpan`, at or below `slowRate` bits a second.
    public static let slowBytes = FlowThresholds.slowBytes
    public static let slowSpan: Duration = .seconds(10)
    public static let slowRate = FlowThresholds.slowRate

    /// Reads one flow, as it ended or (for an open one) as it stands.
    /// - Parameter torWaitingFor: for tor's own connection on the route it is bootstrapping
    ///   through, how long the bootstrap has gone without progress. A stop counts as a freeze when
    ///   we wrote after the last byte came (a request unanswered), or when tor has waited at least
    ///   `stallAfter` too: a frozen consensus download leaves tor nothing to write, and what it
    ///   writes next (a retry on a new stream or connection) came 11 to 30 s later in the test bed.
    public init(_ report: FlowReport, torWaitingFor: Duration? = nil) {
        let counts = report.counts
        let code = report.error?.code
        func milliseconds(_ duration: Duration) -> Int {
            let (seconds, attoseconds) = duration.components
            return Int(clamping: seconds &* 1000 &+ attoseconds / 1_000_000_000_000_000)
        }
        bytesReceived = counts.bytesReceived
        guard report.connected else {
            if code == .connectionRefused {
                kind = .refused
                observed = "the connection was refused (a closed port, or a censor answering for it)"
            } else if code == .timedOut {
                kind = .silentConnect
                observed = "no answer to the connection within \(milliseconds(counts.age) / 1000) s"
            } else {
                kind = .unremarkable
                observed = "the connection did not complete"
            }
            return
        }
        let sinceFirstWrite = counts.firstWriteAfter.map { counts.age - $0 }
        if counts.bytesSent > 0, counts.bytesReceived == 0, let sinceFirstWrite {
            if code == .connectionReset, sinceFirstWrite <= Self.resetWindow {
                kind = .resetAfterFirstPacket
                observed = "reset \(milliseconds(sinceFirstWrite)) ms after our first packet, nothing came back"
                return
            }
            if sinceFirstWrite >= Self.silenceAfterFirstPacket, code != .connectionReset, !report.endedByPeer {
                kind = .silentAfterFirstPacket
                observed = "no reply to our first packet within \(milliseconds(sinceFirstWrite) / 1000) s"
                return
            }
        }
        if code == .connectionReset, counts.bytesReceived > 0 {
            kind = .resetAfterBytes
            observed = "reset after \(Self.kilobytes(counts.bytesReceived)) KB, \(milliseconds(counts.age) / 1000) s in"
            return
        }
        if Self.freezeBytes.contains(counts.bytesReceived), let lastRead = counts.lastReadAfter,
           counts.age - lastRead >= Self.stallAfter,
           (counts.lastWriteAfter.map { $0 > lastRead } ?? false) || (torWaitingFor.map { $0 >= Self.stallAfter } ?? false),
           !report.endedByPeer, code != .connectionReset {
            kind = .stoppedAfterBytes
            observed = "data stopped after ~\(Self.kilobytes(counts.bytesReceived)) KB; the connection stayed open"
            return
        }
        if counts.bytesReceived >= Self.slowBytes, let connected = counts.connectedAfter, let lastRead = counts.lastReadAfter,
           lastRead - connected >= Self.slowSpan {
            let span = Double(milliseconds(lastRead - connected)) / 1000
            let rate = Int(Double(counts.bytesReceived) * 8 / span)
            if rate <= Self.slowRate {
                kind = .slow
                observed = "data came at ~\(rate / 1000) kbit/s"
                return
            }
        }
        kind = .unremarkable
        observed = "carried \(Self.kilobytes(counts.bytesReceived)) KB"
    }

    static func kilobytes(_ bytes: Int) -> Int { (bytes + 512) / 1024 }
}
