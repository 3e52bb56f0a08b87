// DNS messages as a resolver sends them back to dnstt (DnsttTransport's DnsMessage decoder, with
// its caps), and dnstt's reading of a response.
//
// Invariants, trapping when broken:
//   - arbitrary bytes either decode or are refused with dns-malformed; nothing traps or hangs
//     (compression pointers only go backwards);
//   - a decoded message keeps every name within 255 octets and every label within 63;
//   - a decoded message re-encoded (uncompressed) decodes to itself;
//   - dnstt's reading of a decoded message either refuses it or gives a payload whose packets
//     cost at least 2 bytes each.
import DnsttTransport
import FuzzSupport

let domain = DnsName(parsing: "t.example.com")!

func checkNames(_ message: DnsMessage) {
    let names = message.questions.map(\.name) + (message.answers + message.authorities + message.additionals).map(\.name)
    for name in names {
        fuzzCheck(name.wireLength <= DnsName.maximumWireLength, "a name longer than 255 octets")
        fuzzCheck(name.labels.allSatisfy { !$0.isEmpty && $0.count <= DnsName.maximumLabelLength }, "a label out of bounds")
    }
}

func checkDnsMessage(_ raw: UnsafeRawBufferPointer) {
    let bytes = Array(raw)
    let message: DnsMessage
    do {
        message = try DnsMessage(decoding: bytes)
    } catch {
        fuzzCheck(error.code == .dnsMalformed, "an unexpected error: \(error.code)")
        return
    }
    checkNames(message)
    let encoded = message.encoded
    // Uncompressed names may make the message longer than 65535 bytes; only then may it fail.
    if encoded.count <= DnsMessage.maximumSize {
        fuzzCheck((try? DnsMessage(decoding: encoded)) == message, "a decoded message does not re-encode to itself")
    }
    if let payload = try? DnsttWire.responsePayload(message, domain: domain) {
        let packets = DnsttWire.packets(in: payload)
        fuzzCheck(packets.count <= payload.count / 2, "more packets than length prefixes fit")
        fuzzCheck(packets.reduce(0) { $0 + 2 + $1.count } <= payload.count, "packets longer than their payload")
    }
}

runFuzzer(checkDnsMessage)
