// The KCP protocol engine, following skywind3000/kcp as kcp-go v5 runs it, with snowflake's settings
// as defaults (dnstt's differ in window and MTU only):
// stream mode, send and receive windows of 65535 segments, MTU 1400 (MSS 1376), nodelay 0 (minimum
// RTO 100 ms, RTO backoff doubles), interval 10 ms (kcp-go's floor), no fast resend, congestion
// window off (nc = 1: the window is min(snd_wnd, peer's wnd)). Segment layout: KCPSegment.swift.
//
// Pure logic: the caller supplies the clock (milliseconds, wrapping UInt32) and moves packets. Not
// thread-safe; its owner serialises access.
//
// Hostile input (a snowflake proxy or a DNS resolver sees and can forge these bytes): no field of a peer's segment may trap, hang
// or grow memory without a cap. Sequence numbers, una and timestamps wrap (the protocol's modular
// arithmetic: `&+`, `&-`, `timeDiff`); an RTT sample is clamped to maxRTO before any sum (a forged
// ACK timestamp 2^31 ms old used to overflow the Int32 sums, as kcp-go's own wrap hides); a
// segment's RTO backoff stops at maxRTO; a payload longer than maximumIncomingPayload (the MSS
// unless the owner says otherwise: dnstt's server sends 908-byte segments to a client whose own
// MTU is 134) is a typed error; what is
// held for the reader (out of order plus in order) is at most receiveBufferLimit segments, and a
// segment beyond that is neither stored nor acknowledged (the peer sends it again); pending ACKs
// are capped at pendingAcknowledgementLimit. `frg` is ignored (stream mode: always 0).

package struct KCPControlBlock {
    static let overhead = KCPSegment.headerSize
    static let defaultRTO: Int32 = 200
    package static let minRTO: Int32 = 100
    package static let maxRTO: Int32 = 60000
    static let probeInitial: UInt32 = 7000
    static let probeLimit: UInt32 = 120000
    static let deadLink = 20
    /// Segments held for the reader (out of order in rcv_buf plus in order in rcv_queue) at most:
    /// 2048 × 1376 bytes ≈ 2.8 MB. A legitimate server never comes near it (smux's 1 MiB stream
    /// window keeps under 800 segments in flight); a proxy that forges segments all over the
    /// 65535-segment window cannot make us hold 90 MB.
    package static let receiveBufferLimit = 2048
    /// ACKs waiting for the next flush at most (flushes run every 10 ms).
    package static let pendingAcknowledgementLimit = 4096

    let conversation: UInt32
    let mtu: Int
    var mss: Int { mtu - Self.overhead }
    package let sendWindow: UInt32
    let receiveWindow: UInt32
    let interval: UInt32
    /// The longest segment payload accepted from the peer. Held segments are counted, not bytes,
    /// so this also bounds what receiveBufferLimit segments can hold.
    package let maximumIncomingPayload: Int
    /// Names the sender in error messages.
    let peer: String

    package private(set) var sendUnacknowledged: UInt32 = 0  // snd_una
    private(set) var sendNext: UInt32 = 0            // snd_nxt
    private(set) var receiveNext: UInt32 = 0         // rcv_nxt
    private(set) var remoteWindow: UInt32 = 32       // rmt_wnd (IKCP_WND_RCV until told)
    private var smoothedRTT: Int32 = 0
    private var rttVariance: Int32 = 0
    package private(set) var retransmitTimeout: Int32 = KCPControlBlock.defaultRTO
    private var probe: UInt8 = 0
    private var probeWait: UInt32 = 0
    private var probeTimestamp: UInt32 = 0
    package private(set) var deadLinkReached = false

    private struct Outgoing {
        var segment: KCPSegment
        var resendAt: UInt32 = 0
        var rto: Int32 = 0
        var transmissions: Int = 0
    }
    private var sendQueue: [KCPSegment] = []       // snd_queue (not yet in flight)
    private var sendBuffer: [Outgoing] = []        // snd_buf (in flight, ascending sn)
    private var receiveBuffer: [KCPSegment] = []   // rcv_buf (out of order, ascending sn)
    private var receiveQueue: [[UInt8]] = []       // rcv_queue (in order, ready)
    private var acknowledgements: [(sn: UInt32, ts: UInt32)] = []

    private static let askSend: UInt8 = 1
    private static let askTell: UInt8 = 2

    /// `maximumIncomingPayload` nil: the MSS (`mtu` − 24), as when both sides share one MTU.
    package init(conversation: UInt32, mtu: Int = KCPSegment.mtu, window: UInt32 = 65535, interval: UInt32 = 10,
                 maximumIncomingPayload: Int? = nil, peer: String = "the peer") {
        self.conversation = conversation
        self.mtu = mtu
        self.maximumIncomingPayload = maximumIncomingPayload ?? (mtu - Self.overhead)
        self.sendWindow = window
        self.receiveWindow = window
        self.interval = max(10, interval)
        self.peer = peer
    }

    /// Segments queued or in flight: a sender backs off when this reaches the send window.
    package var waitingToSend: Int { sendQueue.count + sendBuffer.count }

    /// Bytes ready for `receive()`.
    var hasReceivedData: Bool { !receiveQueue.isEmpty }

    /// Segments held for the reader now (in order and out of order); at most receiveBufferLimit.
    package var heldSegments: Int { receiveBuffer.count + receiveQueue.count }

    /// ACKs waiting for the next flush.
    package var pendingAcknowledgements: Int { acknowledgements.count }

    /// How far beyond rcv_nxt a segment is accepted: the window, but no more than we hold.
    private var acceptWindow: UInt32 { min(receiveWindow, UInt32(Self.receiveBufferLimit)) }

    // MARK: sending

    /// Stream mode: appends to the last queued segment while it has room, then fills new segments.
    package mutating func send(_ data: [UInt8]) {
        var offset = 0
        if var last = sendQueue.popLast() {
            let room = mss - last.payload.count
            let take = min(room, data.count)
            last.payload += data[0..<take]
            offset = take
            sendQueue.append(last)
        }
        while offset < data.count {
            let take = min(mss, data.count - offset)
            sendQueue.append(KCPSegment(conversation: conversation, command: .push, window: 0, timestamp: 0,
                                        sequenceNumber: 0, unacknowledged: 0,
                                        payload: Array(data[offset..<(offset + take)])))
            offset += take
        }
    }

    /// All in-order bytes received so far.
    package mutating func receive() -> [UInt8] {
        let out = receiveQueue.flatMap { $0 }
        receiveQueue.removeAll(keepingCapacity: true)
        moveReceiveBufferToQueue()
        return out
    }

    // MARK: input

    /// Feeds one packet from the peer.
    package mutating func input(_ packet: [UInt8], now: UInt32) throws(TurboTunnelError) {
        let segments = try KCPSegment.decodePacket(packet, conversation: conversation, peer: peer)
        var maxAck: UInt32?
        for segment in segments where segment.payload.count > maximumIncomingPayload {
            throw TurboTunnelError(code: .kcpMalformed, kind: .protocolViolation,
                                   message: maximumIncomingPayload == mss
                                       ? "a KCP segment from \(peer) carries \(segment.payload.count) bytes, more than the MSS"
                                       : "a KCP segment from \(peer) carries \(segment.payload.count) bytes, more than \(maximumIncomingPayload)")
        }
        for segment in segments {
            remoteWindow = UInt32(segment.window)
            parseUna(segment.unacknowledged)
            shrinkBuffer()
            switch segment.command {
            case .ack:
                if timeDiff(now, segment.timestamp) >= 0 {
                    updateRTT(timeDiff(now, segment.timestamp))
                }
                parseAck(segment.sequenceNumber)
                shrinkBuffer()
                if let current = maxAck { if timeDiff(segment.sequenceNumber, current) > 0 { maxAck = segment.sequenceNumber } }
                else { maxAck = segment.sequenceNumber }
            case .push:
                // Within what we hold: acknowledged (also a duplicate below rcv_nxt, whose ACK was
                // lost). Beyond it: dropped unacknowledged, so the peer sends it again.
                if timeDiff(segment.sequenceNumber, receiveNext &+ acceptWindow) < 0 {
                    if timeDiff(segment.sequenceNumber, receiveNext) >= 0 {
                        guard parseData(segment) else { continue }
                    }
                    if acknowledgements.count < Self.pendingAcknowledgementLimit {
                        acknowledgements.append((segment.sequenceNumber, segment.timestamp))
                    }
                }
            case .windowProbe:
                probe |= Self.askTell
            default:
                break  // WINS: the window was taken from the header above
            }
        }
    }

    /// RFC 6298-style smoothing as skywind3000/kcp. The sample is clamped to [0, maxRTO] first, so
    /// every sum below stays far inside Int32 (7 × 60000 at most) whatever timestamp a peer forges.
    private mutating func updateRTT(_ sample: Int32) {
        let rtt = min(max(0, sample), Self.maxRTO)
        if smoothedRTT == 0 {
            smoothedRTT = rtt
            rttVariance = rtt / 2
        } else {
            let delta = abs(rtt - smoothedRTT)
            rttVariance = (3 * rttVariance + delta) / 4
            smoothedRTT = max(1, (7 * smoothedRTT + rtt) / 8)
        }
        let rto = smoothedRTT + max(Int32(clamping: interval), 4 * rttVariance)
        retransmitTimeout = min(max(Self.minRTO, rto), Self.maxRTO)
    }

    private mutating func parseUna(_ una: UInt32) {
        sendBuffer.removeAll { timeDiff(una, $0.segment.sequenceNumber) > 0 }
    }

    private mutating func parseAck(_ sn: UInt32) {
        guard timeDiff(sn, sendUnacknowledged) >= 0, timeDiff(sn, sendNext) < 0 else { return }
        if let index = sendBuffer.firstIndex(where: { $0.segment.sequenceNumber == sn }) {
            sendBuffer.remove(at: index)
        }
    }

    private mutating func shrinkBuffer() {
        sendUnacknowledged = sendBuffer.first?.segment.sequenceNumber ?? sendNext
    }

    /// Stores an in-window segment; false when it is not kept because the reader's buffers are full
    /// (then it must not be acknowledged). A duplicate counts as kept.
    private mutating func parseData(_ segment: KCPSegment) -> Bool {
        let sn = segment.sequenceNumber
        guard timeDiff(sn, receiveNext &+ acceptWindow) < 0, timeDiff(sn, receiveNext) >= 0 else { return false }
        var insertAt = receiveBuffer.count
        for index in stride(from: receiveBuffer.count - 1, through: 0, by: -1) {
            let existing = receiveBuffer[index].sequenceNumber
            if existing == sn { return true }  // duplicate
            if timeDiff(sn, existing) > 0 { break }
            insertAt = index
        }
        guard heldSegments < Self.receiveBufferLimit else { return false }
        receiveBuffer.insert(segment, at: insertAt)
        moveReceiveBufferToQueue()
        return true
    }

    private mutating func moveReceiveBufferToQueue() {
        while let first = receiveBuffer.first, first.sequenceNumber == receiveNext,
              UInt32(receiveQueue.count) < acceptWindow {
            receiveQueue.append(first.payload)
            receiveBuffer.removeFirst()
            receiveNext &+= 1
        }
    }

    private var unusedWindow: UInt16 {
        UInt16(clamping: receiveWindow > UInt32(receiveQueue.count) ? receiveWindow - UInt32(receiveQueue.count) : 0)
    }

    /// Whether segments are in flight (sent, not yet acknowledged).
    package var hasUnacknowledgedData: Bool { !sendBuffer.isEmpty }

    /// A new carrier: everything in flight is due again at once, with the RTO and the dead-link
    /// count starting over. Without this, segments whose RTO doubled during the outage would wait
    /// seconds on a path that works.
    package mutating func retransmitEverythingNow(now: UInt32) {
        for index in sendBuffer.indices where sendBuffer[index].transmissions > 0 {
            sendBuffer[index].resendAt = now
            sendBuffer[index].rto = retransmitTimeout
            sendBuffer[index].transmissions = 1
        }
        deadLinkReached = false
    }

    // MARK: output

    /// Everything due at `now`: ACKs, window probes, new segments within the window and
    /// retransmissions, packed into packets of at most `mtu` bytes.
    package mutating func flush(now: UInt32) -> [[UInt8]] {
        var packets: [[UInt8]] = []
        var packet: [UInt8] = []
        func emit(_ segment: KCPSegment) {
            if packet.count + segment.encodedSize > mtu, !packet.isEmpty {
                packets.append(packet)
                packet = []
            }
            segment.encode(into: &packet)
        }
        let window = unusedWindow
        func control(_ command: KCPSegment.Command, sn: UInt32 = 0, ts: UInt32 = 0) -> KCPSegment {
            KCPSegment(conversation: conversation, command: command, window: window, timestamp: ts,
                       sequenceNumber: sn, unacknowledged: receiveNext)
        }
        for ack in acknowledgements { emit(control(.ack, sn: ack.sn, ts: ack.ts)) }
        acknowledgements.removeAll(keepingCapacity: true)

        // Probe the peer's window when it is closed.
        if remoteWindow == 0 {
            if probeWait == 0 {
                probeWait = Self.probeInitial
                probeTimestamp = now &+ probeWait
            } else if timeDiff(now, probeTimestamp) >= 0 {
                probeWait = min(Self.probeLimit, max(Self.probeInitial, probeWait + probeWait / 2))
                probeTimestamp = now &+ probeWait
                probe |= Self.askSend
            }
        } else {
            probeWait = 0
            probeTimestamp = 0
        }
        if probe & Self.askSend != 0 { emit(control(.windowProbe)) }
        if probe & Self.askTell != 0 { emit(control(.windowTell)) }
        probe = 0

        // Congestion window off: only the static windows limit what is in flight.
        let congestionWindow = min(sendWindow, remoteWindow)
        while timeDiff(sendNext, sendUnacknowledged &+ congestionWindow) < 0, !sendQueue.isEmpty {
            var segment = sendQueue.removeFirst()
            segment.sequenceNumber = sendNext
            sendNext &+= 1
            sendBuffer.append(Outgoing(segment: segment))
        }

        for index in sendBuffer.indices {
            var due = false
            if sendBuffer[index].transmissions == 0 {
                due = true
                sendBuffer[index].rto = retransmitTimeout
                sendBuffer[index].resendAt = now &+ UInt32(retransmitTimeout)
            } else if timeDiff(now, sendBuffer[index].resendAt) >= 0 {
                due = true
                // nodelay 0: the RTO grows by max(own rto, current rto), i.e. doubles; it stops
                // at maxRTO (kcp-go's uint32 grows on; past 60 s the dead link ends it anyway).
                let grown = sendBuffer[index].rto + max(sendBuffer[index].rto, retransmitTimeout)
                sendBuffer[index].rto = min(grown, Self.maxRTO)
                sendBuffer[index].resendAt = now &+ UInt32(sendBuffer[index].rto)
            }
            if due {
                sendBuffer[index].transmissions += 1
                sendBuffer[index].segment.timestamp = now
                sendBuffer[index].segment.window = window
                sendBuffer[index].segment.unacknowledged = receiveNext
                emit(sendBuffer[index].segment)
                if sendBuffer[index].transmissions >= Self.deadLink { deadLinkReached = true }
            }
        }
        if !packet.isEmpty { packets.append(packet) }
        return packets
    }
}

/// Signed distance between two wrapping 32-bit counters.
package func timeDiff(_ later: UInt32, _ earlier: UInt32) -> Int32 {
    Int32(bitPattern: later &- earlier)
}
