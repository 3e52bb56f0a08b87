import Testing
import TurboTunnel
@testable import DnsttTransport

// The dnstt protocol notes' §7 vectors (domain t.example.com), computed there with upstream dnstt's
// dns/dns.go run unchanged.
@Suite struct DnsttWireTests {
    let domain = DnsName(parsing: "t.example.com")!

    @Test func capacitiesOfTheNotesDomains() throws {
        #expect(DnsttWire.capacity(domain: domain) == 147)
        #expect(try DnsttWire.mtu(domain: domain) == 134)
        #expect(try DnsttWire.mtu(domain: DnsName(parsing: "t.ruhnama.net")!) == 134)
        #expect(try DnsttWire.mtu(domain: DnsName(parsing: "t2.bypasscensorship.org")!) == 128)
        #expect(try DnsttWire.mtu(domain: DnsName(parsing: "t.co")!) == 140)
        // A domain that leaves less than 80 bytes is refused.
        let long = DnsName(labels: Array(repeating: Array("a".utf8) + Array(repeating: 0x62, count: 40), count: 3))!
        #expect(throws: DnsttError.self) { try DnsttWire.mtu(domain: long) }
    }

    /// A full data query: a 134-byte packet fills the name to exactly 255 octets in labels of 63,
    /// 63, 63 and 47 characters, and the message is 282 bytes.
    @Test func fullDataQueryFillsTheName() throws {
        let packet = [UInt8](repeating: 0x5A, count: 134)
        let payload = try DnsttWire.queryPayload(clientID: ClientID.random(), padding: [1, 2, 3], packet: packet)
        let name = try DnsttWire.queryName(payload: payload, domain: domain)
        #expect(name.labels.prefix(4).map(\.count) == [63, 63, 63, 47])
        #expect(name.wireLength == 255)
        #expect(DnsttWire.queryMessage(id: 7, name: name).encoded.count == 282)
        // One byte more does not fit.
        let longer = try DnsttWire.queryPayload(clientID: ClientID.random(), padding: [1, 2, 3], packet: packet + [0])
        #expect(throws: DnsttError.self) { try DnsttWire.queryName(payload: longer, domain: domain) }
        // A packet of 224 bytes or more cannot be announced by a length byte at all.
        #expect(throws: DnsttError.self) {
            try DnsttWire.queryPayload(clientID: ClientID.random(), padding: [], packet: [UInt8](repeating: 0, count: 224))
        }
    }

    @Test func vector1DataQuery() throws {
        let payload = try DnsttWire.queryPayload(clientID: ClientID(bytes: Array("CLIENTID".utf8)), padding: [0xd9, 0xa3, 0x15],
                                                 packet: Array("supercalifragilisticexpialidocious".utf8))
        let name = try DnsttWire.queryName(payload: payload, domain: domain)
        #expect(name.description == "ingesrkokreujy6zumkse43vobsxey3bnruwm4tbm5uwy2ltoruwgzlyobuwc3d.jmrxwg2lpovzq.t.example.com")
        let wire = DnsttWire.queryMessage(id: 0x1234, name: name).encoded
        #expect(hex(wire) == """
            1234010000010000000000013f696e676573726b6f6b7265756a79367a756d6b73653433766f627378657933626e72\
            75776d3474626d35757779326c746f727577677a6c796f6275776333640d6a6d72787767326c706f767a7101740765\
            78616d706c6503636f6d00001000010000291000000000000000
            """)
        #expect(wire.count == 120)
        // The server's reading gives the packet back.
        let decoded = try #require(DnsttWire.serverReading(of: name, domain: domain))
        #expect(decoded.clientID.bytes == Array("CLIENTID".utf8))
        #expect(decoded.packets == [Array("supercalifragilisticexpialidocious".utf8)])
    }

    @Test func vector2Poll() throws {
        let payload = try DnsttWire.queryPayload(clientID: ClientID(bytes: bytes(hex: "0123456789abcdef")), padding: Array(0...7), packet: nil)
        let name = try DnsttWire.queryName(payload: payload, domain: domain)
        #expect(name.description == "aerukz4jvpg672aaaebagbafaydq.t.example.com")
        let wire = DnsttWire.queryMessage(id: 0xabcd, name: name).encoded
        #expect(hex(wire) == """
            abcd010000010000000000011c616572756b7a346a76706736373261616165626167626166617964710174076578\
            616d706c6503636f6d00001000010000291000000000000000
            """)
        #expect(wire.count == 71)
        #expect(try DnsMessage(decoding: wire) == DnsttWire.queryMessage(id: 0xabcd, name: name))
    }

    @Test func vector3ResponseCarriesTwoPackets() throws {
        let wire = bytes(hex: """
            abcd840000010001000000011c616572756b7a346a76706736373261616165626167626166617964710174076578\
            616d706c6503636f6d0000100001c00c001000010000003c000f0e000568656c6c6f0005776f726c640000291000\
            000000000000
            """)
        #expect(wire.count == 98)
        let message = try DnsMessage(decoding: wire)
        #expect(message.answers.count == 1)
        // The answer's name is a pointer to the question's.
        #expect(message.answers[0].name == message.questions[0].name)
        #expect(message.answers[0].ttl == 60)
        let payload = try DnsttWire.responsePayload(message, domain: domain)
        #expect(DnsttWire.packets(in: payload) == [Array("hello".utf8), Array("world".utf8)])
        // Resolvers may change the case of names (0x20): still ours.
        #expect(try DnsttWire.responsePayload(message, domain: DnsName(parsing: "T.Example.COM")!) == payload)
        // A response for another domain is not.
        #expect(throws: DnsttError.self) { try DnsttWire.responsePayload(message, domain: DnsName(parsing: "u.example.com")!) }
    }

    /// Only the checks of dnstt's client (notes §3.2): each one refuses, and nothing else matters.
    @Test func responseChecksAreExactlyTheReferences() throws {
        let name = try DnsttWire.queryName(payload: Array(0..<17), domain: domain)
        let txt = DnsResourceRecord(name: name, type: DnsResourceRecord.typeTXT, class: 1, ttl: 60, data: DnsttWire.encodeTXT([0, 1, 9]))
        let good = DnsMessage(id: 1, flags: 0x8400, questions: [DnsQuestion(name: name, type: 16, class: 1)], answers: [txt])
        #expect(try DnsttWire.responsePayload(good, domain: domain) == [0, 1, 9])
        var notResponse = good
        notResponse.flags = 0x0400
        var servfail = good
        servfail.flags = 0x8402
        var twoAnswers = good
        twoAnswers.answers.append(txt)
        var noAnswer = good
        noAnswer.answers = []
        var cname = good
        cname.answers[0].type = 5
        var outside = good
        outside.answers[0].name = DnsName(parsing: "example.com")!
        for refused in [notResponse, servfail, twoAnswers, noAnswer, cname, outside] {
            #expect(throws: DnsttError.self) { try DnsttWire.responsePayload(refused, domain: domain) }
        }
        // Ignored: ID, question, AA, TC, class, TTL, extra records elsewhere, RD.
        var odd = good
        odd.id = 999
        odd.flags = 0x8000 | 0x0200 | 0x0100
        odd.questions = []
        odd.answers[0].class = 3
        odd.answers[0].ttl = 0
        odd.authorities = [txt]
        #expect(try DnsttWire.responsePayload(odd, domain: domain) == [0, 1, 9])
        // The apex itself counts as under the domain (dnstt's TrimSuffix).
        var apex = good
        apex.answers[0].name = domain
        #expect(try DnsttWire.responsePayload(apex, domain: domain) == [0, 1, 9])
    }

    @Test func txtStringsAndPackets() throws {
        #expect(DnsttWire.encodeTXT([]) == [0])
        let long = (0..<600).map { UInt8(truncatingIfNeeded: $0) }
        let rdata = DnsttWire.encodeTXT(long)
        #expect(rdata.count == 600 + 3)
        #expect(rdata[0] == 255 && rdata[256] == 255 && rdata[512] == 90)
        #expect(try DnsttWire.decodeTXT(rdata) == long)
        #expect(throws: DnsttError.self) { try DnsttWire.decodeTXT([]) }
        #expect(throws: DnsttError.self) { try DnsttWire.decodeTXT([3, 1, 2]) }
        // A trailing partial packet, or a lone length byte, is dropped.
        #expect(DnsttWire.packets(in: [0, 2, 7, 8, 0, 5, 1]) == [[7, 8]])
        #expect(DnsttWire.packets(in: [0, 0, 0]) == [[]])
        #expect(DnsttWire.packets(in: DnsttWire.serverPayload([[1], [], [2, 3]])) == [[1], [], [2, 3]])
    }

    /// The notes' PUSH segment with Noise message 1's length prefix, in a query.
    @Test func kcpSegmentInAQuery() throws {
        let segment = KCPSegment(conversation: 0x0403_0201, command: .push, window: 64, timestamp: 100,
                                 sequenceNumber: 0, unacknowledged: 0, payload: [0x00, 0x30])
        #expect(hex(segment.encoded) == "01020304" + "51" + "00" + "4000" + "64000000" + "00000000" + "00000000" + "02000000" + "0030")
        let payload = try DnsttWire.queryPayload(clientID: ClientID(bytes: bytes(hex: "0123456789abcdef")), padding: [0xaa, 0xbb, 0xcc],
                                                 packet: segment.encoded)
        #expect(try DnsttWire.queryName(payload: payload, domain: domain).description
                == "aerukz4jvpg67y5kxpgbuaicamcfcacaabsaaaaaaaaaaaaaaaaaaaqaaaaaama.t.example.com")
    }

    @Test func base32RoundTripsAndRefusesOddLengths() {
        for count in 0..<40 {
            let data = (0..<count).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            let text = Base32.encode(data)
            #expect(text.count == Base32.encodedLength(count))
            #expect(Base32.decode(text) == data)
            #expect(Base32.decode(text.map { $0 >= 0x61 ? $0 - 0x20 : $0 }) == data)
        }
        #expect(Base32.decode(Array("a".utf8)) == nil)
        #expect(Base32.decode(Array("ab=".utf8)) == nil)
        // "ab" leaves 2 bits over: they must be zero.
        #expect(Base32.decode(Array("ab".utf8)) == nil)
        #expect(Base32.decode(Array("aa".utf8)) == [0])
    }
}
