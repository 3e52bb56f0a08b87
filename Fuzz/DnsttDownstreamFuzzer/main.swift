// dnstt's downstream: TXT character-strings concatenated, then packets behind 2-byte big-endian
// lengths (DnsttWire), also inside a whole response message.
//
// Invariants, trapping when broken:
//   - arbitrary TXT RDATA either gives a payload no longer than the RDATA or is refused with
//     dns-malformed;
//   - arbitrary payload bytes give packets that each cost 2 + length bytes of it, in order, and a
//     payload of p bytes at most p/2 packets;
//   - packets the fuzzer builds, written as the server writes them (lengths, 255-byte strings, one
//     TXT answer under the domain), read back to exactly themselves.
import DnsttTransport
import FuzzSupport

let domain = DnsName(parsing: "t.example.com")!

func checkDownstream(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    guard let mode = input.byte() else { return }
    if mode & 1 == 0 {
        let bytes = input.rest()
        do {
            let payload = try DnsttWire.decodeTXT(bytes)
            fuzzCheck(payload.count < max(1, bytes.count), "a TXT payload longer than its RDATA")
        } catch {
            fuzzCheck(error.code == .dnsMalformed, "an unexpected error: \(error.code)")
        }
        let packets = DnsttWire.packets(in: bytes)
        fuzzCheck(packets.count <= bytes.count / 2, "more packets than length prefixes fit")
        var index = 0
        for packet in packets {
            fuzzCheck(Int(bytes[index]) << 8 | Int(bytes[index + 1]) == packet.count, "a packet's length is not its prefix")
            fuzzCheck(Array(bytes[(index + 2)..<(index + 2 + packet.count)]) == packet, "a packet is not its bytes")
            index += 2 + packet.count
        }
        return
    }
    var packets: [[UInt8]] = []
    while let count = input.uint16() {
        packets.append(input.take(count % 1500))
    }
    let payload = DnsttWire.serverPayload(packets)
    let rdata = DnsttWire.encodeTXT(payload)
    fuzzCheck((try? DnsttWire.decodeTXT(rdata)) == payload, "TXT strings did not read back")
    let name = DnsName(labels: [Array("aerukz4jvpg672aaaebagbafaydq".utf8)] + domain.labels)!
    let response = DnsMessage(id: 1, flags: 0x8400, questions: [DnsQuestion(name: name, type: 16, class: 1)],
                              answers: [DnsResourceRecord(name: name, type: DnsResourceRecord.typeTXT, class: 1, ttl: 60, data: rdata)])
    let wire = response.encoded
    guard wire.count <= DnsMessage.maximumSize else { return }
    guard let decoded = try? DnsMessage(decoding: wire), let read = try? DnsttWire.responsePayload(decoded, domain: domain) else {
        fuzzCheck(false, "a response the server would write was refused")
        return
    }
    fuzzCheck(DnsttWire.packets(in: read) == packets, "packets did not read back")
}

runFuzzer(checkDownstream)
