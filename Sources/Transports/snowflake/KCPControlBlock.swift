// The KCP protocol engine with snowflake's settings, following skywind3000/kcp as kcp-go v5 runs it:
// stream mode, send and receive windows of 65535 segments, MTU 1400 (MSS 1376), nodelay 0 (minimum
// RTO 100 ms, RTO backoff doubles), interval 10 ms (kcp-go's floor), no fast resend, congestion
// window off (nc = 1: the window is min(snd_wnd, peer's wnd)). Segment layout: KCPSegment.swift.
//
// Pure logic: the caller supplies the clock (milliseconds, wrapping UInt32) and moves packets. Not
// thread-safe; its owner serialises access.

struct KCPControlBlock {
    static let overhead = KCPSegment.headerSize
    static let defaultRTO: Int32 = 200
    static let minRTO: Int32 = 100
    static let maxRTO: Int32 = 60000
    static let probeInitial: UInt32 = 7000
    static let probeLimit: UInt32 = 120000
    static let deadLink = 20

    let conversation: UInt32
    let mtu: Int
    var mss: Int { mtu - Self.overhead }
    let sendWindow: UInt32
    let receiveWindow: UInt32
    let interval: UInt32

    private(set) var sendUnacknowledged: UInt32 = 0  // snd_una
    private(set) var sendNext: UInt32 = 0            // snd_nxt
    private(set) var receiveNext: UInt32 = 0         // rcv_nxt
    private(set) var remoteWindow: UInt32 = 32       // rmt_wnd (IKCP_WND_RCV until told)
    private var smoothedRTT: Int32 = 0
    private var rttVariance: Int32 = 0
    private(set) var retransmitTimeout: Int32 = KCPControlBlock.defaultRTO
    private var probe: UInt8 = 0
    private var probeWait: UInt32 = 0
    private var probeTimestamp: UInt32 = 0
    private(set) var deadLinkReached = false

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

    init(conversation: UInt32, mtu: Int = KCPSegment.mtu, window: UInt32 = 65535, interval: UInt32 = 10) {
        self.conversation = conversation
        self.mtu = mtu
        self.sendWindow = window
        self.receiveWindow = window
        self.interval = max(10, interval)
    }

    /// Segments queued or in flight: a sender backs off when this reaches the send window.
    var waitingToSend: Int { sendQueue.count + sendBuffer.count }

    /// Bytes ready for `receive()`.
    var hasReceivedData: Bool { !receiveQueue.isEmpty }

    // MARK: sending

    /// Stream mode: appends to the last queued segment while it has room, then fills new segments.
    mutating func send(_ data: [UInt8]) {
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
    mutating func receive() -> [UInt8] {
        let out = receiveQueue.flatMap { $0 }
        receiveQueue.removeAll(keepingCapacity: true)
        moveReceiveBufferToQueue()
        return out
    }

    // MARK: input

    /// Feeds one packet from the peer.
    mutating func input(_ packet: [UInt8], now: UInt32) throws(SnowflakeError) {
        let segments = try KCPSegment.decodePacket(packet, conversation: conversation)
        var maxAck: UInt32?
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
                if timeDiff(segment.sequenceNumber, receiveNext &+ receiveWindow) < 0 {
                    acknowledgements.append((segment.sequenceNumber, segment.timestamp))
                    if timeDiff(segment.sequenceNumber, receiveNext) >= 0 {
                        parseData(segment)
                    }
                }
            case .windowProbe:
                probe |= Self.askTell
            default:
                break  // WINS: the window was taken from the header above
            }
        }
    }

    private mutating func updateRTT(_ rtt: Int32) {
        if smoothedRTT == 0 {
            smoothedRTT = rtt
            rttVariance = rtt / 2
        } else {
            let delta = abs(rtt - smoothedRTT)
            rttVariance = (3 * rttVariance + delta) / 4
            smoothedRTT = max(1, (7 * smoothedRTT + rtt) / 8)
        }
        let rto = smoothedRTT + max(Int32(interval), 4 * rttVariance)
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

    private mutating func parseData(_ segment: KCPSegment) {
        let sn = segment.sequenceNumber
        guard timeDiff(sn, receiveNext &+ receiveWindow) < 0, timeDiff(sn, receiveNext) >= 0 else { return }
        var insertAt = receiveBuffer.count
        for index in stride(from: receiveBuffer.count - 1, through: 0, by: -1) {
            let existing = receiveBuffer[index].sequenceNumber
            if existing == sn { return }  // duplicate
            if timeDiff(sn, existing) > 0 { break }
            insertAt = index
        }
        receiveBuffer.insert(segment, at: insertAt)
        moveReceiveBufferToQueue()
    }

    private mutating func moveReceiveBufferToQueue() {
        while let first = receiveBuffer.first, first.sequenceNumber == receiveNext,
              UInt32(receiveQueue.count) < receiveWindow {
            receiveQueue.append(first.payload)
            receiveBuffer.removeFirst()
            receiveNext &+= 1
        }
    }

    private var unusedWindow: UInt16 {
        UInt16(clamping: receiveWindow > UInt32(receiveQueue.count) ? receiveWindow - UInt32(receiveQueue.count) : 0)
    }

    /// Whether segments are in flight (sent, not yet acknowledged).
    var hasUnacknowledgedData: Bool { !sendBuffer.isEmpty }

    /// A new carrier: everything in flight is due again at once, with the RTO and the dead-link
    /// count starting over. Without this, segments whose RTO doubled during the outage would wait
    /// seconds on a path that works.
    mutating func retransmitEverythingNow(now: UInt32) {
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
    mutating func flush(now: UInt32) -> [[UInt8]] {
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
                // nodelay 0: the RTO grows by max(own rto, current rto), i.e. doubles.
                sendBuffer[index].rto += max(sendBuffer[index].rto, retransmitTimeout)
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
func timeDiff(_ later: UInt32, _ earlier: UInt32) -> Int32 {
    Int32(bitPattern: later &- earlier)
}
