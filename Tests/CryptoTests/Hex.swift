/// Hex for the vectors: lower-case, no separators. A malformed string is the fixture's fault, so
/// it traps with the offending text.
enum Hex {
    static func decode(_ text: String) -> [UInt8] {
        let digits = Array(text.utf8)
        precondition(digits.count % 2 == 0, "odd-length hex: \(text)")
        return stride(from: 0, to: digits.count, by: 2).map { index in
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else {
                preconditionFailure("not hex: \(text)")
            }
            return high << 4 | low
        }
    }

    static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0f)]] }, as: UTF8.self)
    }

    private static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
