/// Double-quoted strings for the text protocols Postern writes: tor's control protocol, pt-spec's
/// managed-proxy lines, NIP-01 JSON and Go's encoding/json. All of them escape backslash, quote,
/// newline, carriage return and tab as C does; what else is escaped is each protocol's own rule,
/// given as `other`.
public enum QuotedText {
    /// `text` in double quotes. `other` returns the escape for a scalar the common rules leave
    /// alone, or nil to keep it as it is.
    public static func quoted(_ text: String, escaping other: (Unicode.Scalar) -> String? = { _ in nil }) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if let escape = other(scalar) { out += escape } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }

    /// `\uXXXX` with four lower-case hex digits, as JSON writes a scalar of the Basic Multilingual
    /// Plane that it escapes.
    public static func jsonUnicodeEscape(_ scalar: Unicode.Scalar) -> String {
        let digits = String(scalar.value, radix: 16)
        return "\\u" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
