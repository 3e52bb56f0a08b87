// dnstt's query encoding (DnsttWire): a ClientID, padding and a KCP packet in a base32 name under
// a domain, in a query message.
//
// Invariants, trapping when broken:
//   - whatever the domain, padding and packet, encoding either succeeds or is refused with a typed
//     error; a name it builds is at most 255 octets with labels of at most 63;
//   - the capacity promise: under a domain the MTU check accepts, a packet no longer than that MTU
//     with 3 bytes of padding always fits;
//   - the server's reading of the name (upper-cased, as resolvers may change case) gives back the
//     ClientID and exactly the packet; the query message decodes to itself.
import DnsttTransport
import FuzzSupport
import TurboTunnel

func checkQuery(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    guard let shape = input.byte() else { return }
    // A domain of 1 to 4 labels of fuzzer-chosen lengths (letters only).
    var labels: [[UInt8]] = []
    for index in 0..<(Int(shape & 3) + 1) {
        let length = max(1, Int(input.byte() ?? 1) % 64)
        labels.append([UInt8](repeating: UInt8(0x61 + index), count: length))
    }
    guard let domain = DnsName(labels: labels) else { return }
    var idBytes = input.take(8)
    idBytes += [UInt8](repeating: 0x55, count: 8 - idBytes.count)
    let clientID = try! ClientID(bytes: idBytes)
    let padding = input.take(Int(input.byte() ?? 3) % 40)
    let hasPacket = shape & 4 == 0
    let packet = hasPacket ? input.take(Int(input.byte() ?? 0)) : nil
    let id = UInt16(input.uint16() ?? 0)

    let name: DnsName
    do {
        let payload = try DnsttWire.queryPayload(clientID: clientID, padding: padding, packet: packet)
        name = try DnsttWire.queryName(payload: payload, domain: domain)
    } catch {
        fuzzCheck(error.code == .queryTooLong, "an unexpected error: \(error.code)")
        if let mtu = try? DnsttWire.mtu(domain: domain), padding.count <= DnsttWire.dataPadding, (packet?.count ?? 0) <= mtu {
            fuzzCheck(false, "a packet within the domain's MTU of \(mtu) did not fit")
        }
        return
    }
    fuzzCheck(name.wireLength <= DnsName.maximumWireLength, "a name longer than 255 octets")
    fuzzCheck(name.labels.allSatisfy { !$0.isEmpty && $0.count <= DnsName.maximumLabelLength }, "a label out of bounds")

    // What a resolver using 0x20 would send on, read as the server does.
    let shouted = DnsName(labels: name.labels.map { $0.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 } })!
    guard let decoded = DnsttWire.serverReading(of: shouted, domain: domain) else {
        fuzzCheck(false, "the server cannot read a name we built")
        return
    }
    fuzzCheck(decoded.clientID == clientID, "the ClientID did not survive")
    fuzzCheck(decoded.packets == (packet.map { [$0] } ?? []), "the packet did not survive")

    let message = DnsttWire.queryMessage(id: id, name: name)
    fuzzCheck((try? DnsMessage(decoding: message.encoded)) == message, "the query does not decode to itself")
}

runFuzzer(checkQuery)
