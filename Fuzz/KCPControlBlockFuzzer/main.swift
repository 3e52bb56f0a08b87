// The KCP control block as a state machine (not only its segment decoder): our engine talks to an
// honest peer engine over a link the fuzzer drives, while the fuzzer also plays the hostile proxy in
// between: it drops packets, replays old ones, forges segments with any field values, feeds raw
// bytes and moves the clock by any amount (wrapping included).
//
// Each input is a list of up to 20 operations (first byte of each):
//   0 tick       advance the clock (a byte × 10 ms, or with 0xFF a 32-bit jump), flush both sides,
//                deliver what each sends, dropping the packets the next byte's bits say
//   1 forge      a segment built from fuzzer fields (any cmd, wnd, ts age, sn, una, payload length)
//   2 replay     a packet the peer sent earlier, again
//   3 raw        arbitrary bytes as one packet
//   4 write      the peer (or, odd byte, our side) queues up to 127 more bytes of its known stream
// Small MTU (128) so that a short input covers several segments.
//
// Invariants, trapping when broken:
//   - no Swift trap anywhere (overflow, bounds);
//   - segments held for the reader stay within receiveBufferLimit, pending ACKs within
//     pendingAcknowledgementLimit, the RTO within [minRTO, maxRTO];
//   - without a forged PUSH (even an empty one takes a sequence number), what our side delivers is a prefix of what the peer sent, and what
//     the peer delivers is a prefix of what our side sent.
import FuzzSupport
import TurboTunnel

let conversation: UInt32 = 0xC0FF_EE01
let mtu = 128

func streamByte(_ index: Int, salt: UInt8) -> UInt8 { UInt8(truncatingIfNeeded: index &* 31 &+ index >> 8) ^ salt }

func checkControlBlock(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    var ours = KCPControlBlock(conversation: conversation, mtu: mtu)
    var peer = KCPControlBlock(conversation: conversation, mtu: mtu)
    var now = UInt32(input.uint16() ?? 0) << 16
    var peerSent = 0, oursSent = 0
    var deliveredToUs: [UInt8] = [], deliveredToPeer: [UInt8] = []
    var peerPackets: [[UInt8]] = []
    var forgedData = false
    var operations = 0

    func checkCaps() {
        fuzzCheck(ours.heldSegments <= KCPControlBlock.receiveBufferLimit, "held segments over the cap")
        fuzzCheck(ours.pendingAcknowledgements <= KCPControlBlock.pendingAcknowledgementLimit, "pending ACKs over the cap")
        fuzzCheck((KCPControlBlock.minRTO...KCPControlBlock.maxRTO).contains(ours.retransmitTimeout), "RTO out of range")
    }

    while let operation = input.byte(), operations < 20 {
        operations += 1
        switch operation % 5 {
        case 0:
            let step = input.byte() ?? 1
            if step == 0xFF, let high = input.uint16(), let low = input.uint16() {
                now &+= UInt32(high) << 16 | UInt32(low)
            } else {
                now &+= UInt32(step) * 10
            }
            let drops = input.byte() ?? 0
            for (index, packet) in peer.flush(now: now).enumerated() {
                if peerPackets.count < 32 { peerPackets.append(packet) }
                if drops >> (index % 8) & 1 == 0 { try? ours.input(packet, now: now) }
            }
            for (index, packet) in ours.flush(now: now).enumerated() where drops >> ((index + 4) % 8) & 1 == 0 {
                try? peer.input(packet, now: now)
            }
            deliveredToUs += ours.receive()
            deliveredToPeer += peer.receive()
        case 1:
            // cmd, payload byte, frg, wnd(2), ts age(4), sn(4), una(4), sn mode, payload length
            let fields = input.take(19) + [UInt8](repeating: 0, count: 19)
            func word(_ at: Int) -> UInt32 { fields[at..<(at + 4)].reduce(0) { $0 << 8 | UInt32($1) } }
            let command = KCPSegment.Command(rawValue: 81 + fields[0] % 4)
            let length = Int(fields[18] % 112)
            let payload = [UInt8](repeating: fields[1], count: length)
            // Even an empty PUSH takes its sequence number's place in the stream.
            if command == .push { forgedData = true }
            let segment = KCPSegment(conversation: conversation, command: command, fragment: fields[2],
                                     window: UInt16(fields[3]) << 8 | UInt16(fields[4]), timestamp: now &- word(5),
                                     sequenceNumber: fields[17] & 1 == 0 ? word(9) : word(9) % 64, unacknowledged: word(13),
                                     payload: payload)
            try? ours.input(segment.encoded, now: now)
        case 2:
            guard !peerPackets.isEmpty else { break }
            let pick = Int(input.byte() ?? 0) % peerPackets.count
            try? ours.input(peerPackets[pick], now: now)
        case 3:
            let packet = input.chunk() ?? []
            // A raw packet with a PUSH of our conversation counts as forged data.
            if let segments = try? KCPSegment.decodePacket(packet, conversation: conversation),
               segments.contains(where: { $0.command == .push }) {
                forgedData = true
            }
            try? ours.input(packet, now: now)
        default:
            let count = Int(input.byte() ?? 0) & 0x7f
            if count & 1 == 0 {
                peer.send((peerSent..<(peerSent + count)).map { streamByte($0, salt: 0x5A) })
                peerSent += count
            } else {
                ours.send((oursSent..<(oursSent + count)).map { streamByte($0, salt: 0xA5) })
                oursSent += count
            }
        }
        checkCaps()
    }
    deliveredToUs += ours.receive()
    deliveredToPeer += peer.receive()
    checkCaps()
    if !forgedData {
        fuzzCheck(deliveredToUs.count <= peerSent, "we delivered more than the peer sent")
        fuzzCheck(deliveredToUs.indices.allSatisfy { deliveredToUs[$0] == streamByte($0, salt: 0x5A) },
                  "what we delivered is not a prefix of what the peer sent")
    }
    // Forged ACKs make our side drop data the peer never got, never invent it.
    fuzzCheck(deliveredToPeer.count <= oursSent, "the peer got more than we sent")
    fuzzCheck(deliveredToPeer.indices.allSatisfy { deliveredToPeer[$0] == streamByte($0, salt: 0xA5) },
              "what the peer got is not a prefix of what we sent")
}

runFuzzer(checkControlBlock)
