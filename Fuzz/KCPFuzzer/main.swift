// KCP packets as kcp-go sends them for snowflake: one or more 24-byte-header segments back to back.
//
// Invariants, trapping when broken:
//   - a decoded packet re-encodes to exactly the bytes it consumed, and what is left is shorter
//     than one header (the decoder's documented stop);
//   - with a conversation ID given, every decoded segment carries it;
//   - segments the fuzzer builds (any command, fields and payload) decode to themselves.
import FuzzSupport
import TurboTunnel

func checkKCP(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    guard let mode = input.byte() else { return }
    if mode & 1 == 0 {
        let packet = input.rest()
        let fixed: UInt32? = mode & 2 == 0 ? nil : 0x0A0B_0C0D
        guard let segments = try? KCPSegment.decodePacket(packet, conversation: fixed) else { return }
        var encoded: [UInt8] = []
        for segment in segments { segment.encode(into: &encoded) }
        fuzzCheck(packet.starts(with: encoded), "segments do not re-encode to the bytes they came from")
        fuzzCheck(packet.count - encoded.count < KCPSegment.headerSize, "a whole segment was left undecoded")
        if let fixed { fuzzCheck(segments.allSatisfy { $0.conversation == fixed }, "a segment of another conversation") }
        if let first = segments.first { fuzzCheck(segments.allSatisfy { $0.conversation == first.conversation }, "mixed conversations") }
        return
    }
    var segments: [KCPSegment] = []
    let conversation = UInt32(input.uint16() ?? 1) << 16 | 0x5A5A
    while let command = input.byte() {
        let fields = input.take(14) + [UInt8](repeating: 0, count: 14)
        let payload = input.chunk() ?? []
        func word(_ at: Int) -> UInt32 { fields[at...].prefix(4).reduce(0) { $0 << 8 | UInt32($1) } }
        segments.append(KCPSegment(conversation: conversation, command: KCPSegment.Command(rawValue: 81 + command % 4),
                                   fragment: fields[0], window: UInt16(fields[1]) << 8 | UInt16(fields[13]),
                                   timestamp: word(2), sequenceNumber: word(6), unacknowledged: word(10), payload: payload))
    }
    var packet: [UInt8] = []
    for segment in segments { segment.encode(into: &packet) }
    let decoded = try? KCPSegment.decodePacket(packet, conversation: conversation)
    fuzzCheck(decoded == segments, "built segments did not decode to themselves")
}

runFuzzer(checkKCP)
