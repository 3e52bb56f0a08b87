import TurboTunnel

// dnstt's packets in DNS messages (docs/plans/DNSTT.md §2; the dnstt protocol notes §2-§3, read from
// dnstt's dnstt-client/dns.go and main.go).
//
// Upstream, one query carries one KCP packet in its name:
//
//     payload = ClientID(8) | 0xE0+n | n random bytes | [L(1), L < 0xE0 | L bytes of KCP packet]
//     name    = base32(payload) lower case, no '=', in 63-character labels, then the tunnel domain
//
// with n = 3 before a packet and n = 8 in an empty poll. The message: a random ID, flags 0x0100
// (RD), one question (TXT, IN) and an OPT record advertising 4096 bytes, uncompressed.
//
// Downstream, the answer's TXT strings concatenated are packets, each behind a 2-byte big-endian
// length; a trailing partial packet is dropped. The response checks are exactly dnstt's: QR set,
// RCODE 0, exactly one answer, its name under the domain (any case), type TXT. The ID, the
// question, AA, TC, the class, the TTL and OPT are not looked at (responses come back in any
// order, through resolvers that may rewrite them; KCP sorts the packets out).
//
// Hostile input: the message went through DnsMessage's decoder (its caps); TXT strings are bounded
// by the RDATA they sit in; each packet costs at least its 2 length bytes, so a payload of p bytes
// yields at most p/2 packets, each handed to KCP, which checks it.

/// Encoders and decoders of dnstt's queries and responses.
public enum DnsttWire {
    /// Padding before a packet, and in an empty poll (which makes every poll's name unique, so a
    /// resolver cannot answer it from its cache).
    public static let dataPadding = 3
    public static let pollPadding = 8
    /// A prefix byte from here up announces padding of (byte − 0xE0) bytes; below, a packet length.
    public static let paddingPrefix: UInt8 = 0xE0
    /// The most padding one prefix can announce.
    public static let maximumPadding = Int(UInt8.max - paddingPrefix)
    /// The smallest KCP MTU the reference client accepts for a domain.
    public static let minimumMTU = 80
    /// The query's question and OPT record.
    public static let ednsPayloadSize: UInt16 = 4096
    public static let queryFlags: UInt16 = 0x0100

    /// Payload bytes one query name can carry under `domain` (the reference client's arithmetic, in
    /// integers): what is left of 254 octets after the domain, less one length octet per 63
    /// characters, as bytes of base32 (5 per 8 characters).
    public static func capacity(domain: DnsName) -> Int {
        var capacity = 254 - domain.labels.reduce(0) { $0 + $1.count + 1 }
        capacity = capacity * 63 / 64
        capacity = capacity * 5 / 8
        return capacity
    }

    /// The client's KCP MTU for `domain`: the capacity less ClientID, padding prefix, 3 bytes of
    /// padding and the length byte. At least ``minimumMTU``, or the domain is refused.
    public static func mtu(domain: DnsName) throws(DnsttError) -> Int {
        let mtu = capacity(domain: domain) - ClientID.size - 1 - dataPadding - 1
        guard mtu >= minimumMTU else {
            throw DnsttError(code: .domainTooLong, kind: .invalidInput,
                             message: "the dnstt domain leaves room for KCP packets of \(max(0, mtu)) bytes, fewer than \(minimumMTU)")
        }
        return mtu
    }

    /// The bytes a query name carries: ClientID, padding (1 to 31 random bytes; the caller draws
    /// them fresh for every query) and at most one packet shorter than 224 bytes.
    public static func queryPayload(clientID: ClientID, padding: [UInt8], packet: [UInt8]?) throws(DnsttError) -> [UInt8] {
        guard padding.count <= maximumPadding else {
            throw DnsttError(code: .queryTooLong, kind: .invalidInput, message: "at most \(maximumPadding) bytes of padding fit one prefix")
        }
        var payload = clientID.bytes
        payload.append(paddingPrefix + UInt8(padding.count))
        payload += padding
        if let packet {
            guard packet.count < Int(paddingPrefix) else {
                throw DnsttError(code: .queryTooLong, kind: .invalidInput,
                                 message: "a KCP packet of \(packet.count) bytes does not fit a dnstt query (at most \(paddingPrefix - 1))")
            }
            payload.append(UInt8(packet.count))
            payload += packet
        }
        return payload
    }

    /// `payload` in base32 labels of 63 characters, then `domain`; refused when the name would be
    /// longer than 255 octets.
    public static func queryName(payload: [UInt8], domain: DnsName) throws(DnsttError) -> DnsName {
        let text = Base32.encode(payload)
        var labels: [[UInt8]] = []
        var start = 0
        while start < text.count {
            let end = min(start + DnsName.maximumLabelLength, text.count)
            labels.append(Array(text[start..<end]))
            start = end
        }
        guard let name = DnsName(labels: labels + domain.labels) else {
            throw DnsttError(code: .queryTooLong, kind: .invalidInput,
                             message: "a dnstt payload of \(payload.count) bytes does not fit a 255-octet name under the domain")
        }
        return name
    }

    /// The query for `name`: ID, RD, one TXT question, an OPT record (4096 bytes, version 0).
    public static func queryMessage(id: UInt16, name: DnsName) -> DnsMessage {
        DnsMessage(id: id, flags: queryFlags,
                   questions: [DnsQuestion(name: name, type: DnsResourceRecord.typeTXT, class: DnsResourceRecord.classIN)],
                   additionals: [DnsResourceRecord(name: .root, type: DnsResourceRecord.typeOPT, class: ednsPayloadSize, ttl: 0, data: [])])
    }

    /// The TXT payload of a response to one of our queries, after exactly the reference client's
    /// checks (see the top of this file).
    public static func responsePayload(_ message: DnsMessage, domain: DnsName) throws(DnsttError) -> [UInt8] {
        guard message.isResponse else { throw notUsable("a DNS message that is not a response") }
        guard message.responseCode == 0 else { throw notUsable("a DNS response with RCODE \(message.responseCode)") }
        guard message.answers.count == 1 else { throw notUsable("a DNS response with \(message.answers.count) answers, not 1") }
        let answer = message.answers[0]
        guard answer.name.labels(under: domain) != nil else { throw notUsable("a DNS answer for a name outside the tunnel domain") }
        guard answer.type == DnsResourceRecord.typeTXT else { throw notUsable("a DNS answer of type \(answer.type), not TXT") }
        return try decodeTXT(answer.data)
    }

    private static func notUsable(_ message: String) -> DnsttError {
        DnsttError(code: .responseNotUsable, kind: .protocolViolation, message: message)
    }

    /// TXT RDATA (one or more character-strings, RFC 1035 §3.3.14) concatenated. Empty RDATA, or a
    /// string longer than what is left, is malformed.
    public static func decodeTXT(_ data: [UInt8]) throws(DnsttError) -> [UInt8] {
        guard !data.isEmpty else { throw DnsMessage.malformed("a TXT record without a character-string") }
        var out: [UInt8] = []
        var index = 0
        while index < data.count {
            let length = Int(data[index])
            index += 1
            guard data.count - index >= length else {
                throw DnsMessage.malformed("a TXT character-string goes past the end of its record")
            }
            out += data[index..<(index + length)]
            index += length
        }
        return out
    }

    /// `payload` as TXT RDATA as dnstt-server writes it: 255-byte strings, then one of 0 to 255
    /// bytes (so an empty payload is a single empty string).
    public static func encodeTXT(_ payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        while payload.count - index >= 255 {
            out.append(255)
            out += payload[index..<(index + 255)]
            index += 255
        }
        out.append(UInt8(payload.count - index))
        out += payload[index...]
        return out
    }

    /// The packets of a response payload: each behind a 2-byte big-endian length, to the end; a
    /// trailing partial packet (or a lone length byte) is dropped, as the reference client does.
    public static func packets(in payload: [UInt8]) -> [[UInt8]] {
        var packets: [[UInt8]] = []
        var index = 0
        while payload.count - index >= 2 {
            let length = Int(payload[index]) << 8 | Int(payload[index + 1])
            index += 2
            guard payload.count - index >= length else { break }
            packets.append(Array(payload[index..<(index + length)]))
            index += length
        }
        return packets
    }

    /// `packets` behind their 2-byte big-endian lengths (the server's side; tests and fuzzers).
    package static func serverPayload(_ packets: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for packet in packets {
            out.append(UInt8(truncatingIfNeeded: packet.count >> 8))
            out.append(UInt8(truncatingIfNeeded: packet.count))
            out += packet
        }
        return out
    }

    /// What dnstt-server reads from a query name under `domain`: the labels in front of the domain
    /// joined and base32-decoded (any case); nil when the name is outside the domain or the text
    /// does not decode (the server's NXDOMAIN). Tests and fuzzers use it to check the encoder.
    package static func decodeQueryName(_ name: DnsName, domain: DnsName) -> [UInt8]? {
        guard let prefix = name.labels(under: domain) else { return nil }
        return Base32.decode(prefix.flatMap { $0 })
    }

    /// The server's reading of a payload: the ClientID and the packets, skipping padding; nil when
    /// it is shorter than a ClientID. A packet or padding cut short ends the reading (the server
    /// keeps what came before).
    package static func decodeQueryPayload(_ payload: [UInt8]) -> (clientID: ClientID, packets: [[UInt8]])? {
        guard payload.count >= ClientID.size, let clientID = try? ClientID(bytes: Array(payload[..<ClientID.size])) else { return nil }
        var packets: [[UInt8]] = []
        var index = ClientID.size
        while index < payload.count {
            let prefix = payload[index]
            index += 1
            let length = prefix >= paddingPrefix ? Int(prefix - paddingPrefix) : Int(prefix)
            guard payload.count - index >= length else { break }
            if prefix < paddingPrefix { packets.append(Array(payload[index..<(index + length)])) }
            index += length
        }
        return (clientID, packets)
    }

    /// Both steps of the server's reading of a query name.
    package static func serverReading(of name: DnsName, domain: DnsName) -> (clientID: ClientID, packets: [[UInt8]])? {
        decodeQueryName(name, domain: domain).flatMap(decodeQueryPayload)
    }
}
