/// RFC 4648 §6 base32 as dnstt writes it in query names: the standard alphabet in lower case,
/// without `=` padding. Decoding (tests, fuzzers, a server) accepts either case, as dnstt-server
/// upper-cases a name before it decodes it (resolvers may randomise case).
enum Base32 {
    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)

    /// Characters for `count` bytes: ceil(8 × count / 5).
    static func encodedLength(_ count: Int) -> Int { (count * 8 + 4) / 5 }

    static func encode(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(encodedLength(bytes.count))
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[Int((buffer >> UInt32(bits)) & 0x1F)])
            }
            buffer &= (1 << UInt32(bits)) - 1
        }
        if bits > 0 { out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 0x1F)]) }
        return out
    }

    /// nil for a character outside the alphabet (either case), a length no encoding has (1, 3 or 6
    /// characters mod 8), or non-zero bits after the last byte (Go's `NoPadding` decoder is strict
    /// the same way only about the length; the extra bits are checked here so that decoding is the
    /// exact inverse of encoding).
    static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        guard ![1, 3, 6].contains(text.count % 8) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(text.count * 5 / 8)
        var buffer: UInt32 = 0
        var bits = 0
        for character in text {
            let value: UInt8
            switch character {
            case 0x61...0x7A: value = character - 0x61
            case 0x41...0x5A: value = character - 0x41
            case 0x32...0x37: value = character - 0x32 + 26
            default: return nil
            }
            buffer = buffer << 5 | UInt32(value)
            bits += 5
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
                buffer &= (1 << UInt32(bits)) - 1
            }
        }
        guard buffer == 0 else { return nil }
        return out
    }
}
