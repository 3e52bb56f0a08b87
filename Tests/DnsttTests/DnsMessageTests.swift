import Testing
@testable import DnsttTransport

/// The DNS decoder's caps (docs/plans/DNSTT.md §2, "Decoder caps"): each refusal is a typed error.
@Suite struct DnsMessageTests {
    let header: [UInt8] = [0x12, 0x34, 0x84, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]

    func question(_ name: [UInt8]) -> [UInt8] { header + name + [0, 16, 0, 1] }

    @Test func refusesWhatBreaksTheCaps() {
        let cases: [(String, [UInt8])] = [
            ("short header", Array(header.prefix(11))),
            ("a pointer to itself", question([0xC0, 12])),
            ("a pointer forwards", question([0xC0, 14, 1, 0x61, 0])),
            ("a loop through two pointers", header + [1, 0x61, 0xC0, 16, 0xC0, 12, 0, 16, 0, 1]),
            ("a label past the end", question([5, 0x61])),
            ("a name without its end", Array(question([1, 0x61]).dropLast(4))),
            ("an extended label type", question([0x41, 0])),
            ("trailing bytes", question([0]) + [0]),
            ("a truncated question", Array(question([0]).dropLast(1))),
            ("an RDLENGTH past the end", [0x12, 0x34, 0x84, 0, 0, 0, 0, 1, 0, 0, 0, 0] + [0, 0, 16, 0, 1, 0, 0, 0, 60, 0, 9, 1]),
            ("a count with nothing behind it", [0x12, 0x34, 0x84, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
            ("a message over 65535 bytes", question([0]) + [UInt8](repeating: 0, count: 65536)),
        ]
        for (label, wire) in cases {
            #expect(throws: DnsttError.self, "\(label)") { try DnsMessage(decoding: wire) }
        }
    }

    /// 255 octets is the largest name, whether written out or through pointers.
    @Test func nameLengthIsCappedAcrossPointers() throws {
        let label63 = [63] + [UInt8](repeating: 0x61, count: 63)
        let full = label63 + label63 + label63 + [61] + [UInt8](repeating: 0x62, count: 61) + [0]  // 255 octets
        #expect(try DnsMessage(decoding: question(full)).questions[0].name.wireLength == 255)
        let over = label63 + label63 + label63 + [62] + [UInt8](repeating: 0x62, count: 62) + [0]  // 256
        #expect(throws: DnsttError.self) { try DnsMessage(decoding: question(over)) }
        // The first name is 255 octets; a second one puts a label in front of a pointer to it.
        var wire: [UInt8] = [0x12, 0x34, 0x84, 0x00, 0, 2, 0, 0, 0, 0, 0, 0] + full + [0, 16, 0, 1]
        wire += [1, 0x63, 0xC0, 12, 0, 16, 0, 1]
        #expect(throws: DnsttError.self) { try DnsMessage(decoding: wire) }
    }

    @Test func pointerChainsBackwardsAreRead() throws {
        // question "a.b" at 12; a second question "c" + pointer to "b" (offset 14).
        let wire: [UInt8] = [0x12, 0x34, 0x84, 0x00, 0, 2, 0, 0, 0, 0, 0, 0]
            + [1, 0x61, 1, 0x62, 0, 0, 16, 0, 1]
            + [1, 0x63, 0xC0, 14, 0, 16, 0, 1]
        let message = try DnsMessage(decoding: wire)
        #expect(message.questions.map(\.name.description) == ["a.b", "c.b"])
        // Re-encoded without compression, it reads back the same.
        #expect(try DnsMessage(decoding: message.encoded) == message)
    }

    @Test func namesPrintWithoutForgingStructure() {
        let name = DnsName(labels: [[0x61, 0x2E, 0x0A], [0x5C]])!
        #expect(name.description == "a\\046\\010.\\092")
        #expect(DnsName.root.description == ".")
        #expect(DnsName(parsing: "t.example.com.")?.labels.count == 3)
        #expect(DnsName(parsing: "t..com") == nil)
        #expect(DnsName(parsing: String(repeating: "a", count: 64) + ".com") == nil)
    }
}
