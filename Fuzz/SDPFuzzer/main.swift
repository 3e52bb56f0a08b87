// The proxy's SDP answer as the snowflake client reads it (DataChannelAnswer), ICE candidate lines
// (RFC 8839), and our own offer (DataChannelOffer) read back by the answer parser.
//
// DCEP (RFC 8832) has no parser of ours to fuzz: the client sends DATA_CHANNEL_OPEN and only checks
// that a control message's first byte is DATA_CHANNEL_ACK (WebRTCDataChannel.swift); usrsctp parses
// the SCTP below it.
//
// Invariants, trapping when broken:
//   - a candidate line, parsed, written and parsed again, is stable (the second parse equals the
//     first);
//   - an accepted answer has ICE credentials, a fingerprint of at least one byte, and candidates
//     that are stable the same way;
//   - an offer built from fuzzer-chosen credentials, digest and candidates reads back through the
//     answer parser with exactly those values.
import FuzzSupport
import SnowflakeTransport

func stable(_ candidate: ICECandidate) -> Bool {
    guard let again = try? ICECandidate(attributeValue: candidate.attributeValue),
          let third = try? ICECandidate(attributeValue: again.attributeValue) else { return false }
    return again == third
}

/// ice-chars (RFC 8839): ALPHA / DIGIT / "+" / "/".
let iceChars = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/")

func word(_ bytes: [UInt8], minimum: Int) -> String {
    String((bytes + [UInt8](repeating: 7, count: max(0, minimum - bytes.count))).map { iceChars[Int($0) % iceChars.count] })
}

func checkSDP(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    guard let mode = input.byte() else { return }
    switch mode % 3 {
    case 0:
        let text = String(decoding: input.rest(), as: UTF8.self)
        if let candidate = try? ICECandidate(attributeValue: text) { fuzzCheck(stable(candidate), "a candidate is not stable") }
    case 1:
        let text = String(decoding: input.rest(), as: UTF8.self)
        guard let answer = try? DataChannelAnswer(sdp: text) else { return }
        fuzzCheck(!answer.certificateDigest.isEmpty, "an empty fingerprint was accepted")
        fuzzCheck(answer.candidates.allSatisfy(stable), "an answer's candidate is not stable")
    default:
        let ufrag = word(input.chunk() ?? [], minimum: 4)
        let pwd = word(input.chunk() ?? [], minimum: 22)
        let digest = input.take(32) + [UInt8](repeating: 0xEE, count: 32)
        var candidates: [ICECandidate] = []
        while let component = input.byte() {
            let fields = input.take(9) + [UInt8](repeating: 1, count: 9)
            let port = UInt16(fields[4]) << 8 | UInt16(fields[5])
            let address = "127.\(fields[0]).\(fields[1]).\(fields[2])"
            let related = component & 0x80 != 0
            candidates.append(ICECandidate(
                foundation: word(Array(fields[6...8]), minimum: 1), component: Int(component & 0x7F) + 1,
                priority: UInt32(fields[3]) << 24 | UInt32(fields[6]), address: address, port: port,
                type: ["host", "srflx", "prflx", "relay"][Int(fields[7] % 4)],
                relatedAddress: related ? "0.0.0.0" : nil, relatedPort: related ? UInt16(fields[8]) : nil))
        }
        let offer = DataChannelOffer(sessionID: 42, iceUsernameFragment: ufrag, icePassword: pwd,
                                     certificateDigest: Array(digest.prefix(32)), candidates: candidates)
        guard let read = try? DataChannelAnswer(sdp: offer.sdp) else {
            fuzzCheck(false, "our own offer does not parse")
            return
        }
        fuzzCheck(read.iceUsernameFragment == ufrag && read.icePassword == pwd, "ICE credentials changed")
        fuzzCheck(read.fingerprintAlgorithm == "sha-256" && read.certificateDigest == Array(digest.prefix(32)), "fingerprint changed")
        // Written in pion's shape (each for components 1 and 2, pion's foundation and priority): read
        // back exactly as written.
        fuzzCheck(read.candidates.map(\.attributeValue) == PionOfferShape.candidateLines(candidates), "candidates changed")
        fuzzCheck(read.setup == "actpass" && read.sctpPort == 5000, "setup or SCTP port changed")
    }
}

runFuzzer(checkSDP)
