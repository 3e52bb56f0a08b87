/// Checks that several transports' argument rules share (URLs, host names, base64, uTLS names).
/// They say only whether a value is well formed; the rules that use them choose the code and the
/// reason.
public enum BridgeArgumentSyntax {
    /// `http://` or `https://` (any case), a host (name, IPv4 or bracketed IPv6), an optional
    /// port, then anything. No user info.
    public static func isHTTPURL(_ text: String) -> Bool {
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            rest = text.dropFirst(8)
        } else if lower.hasPrefix("http://") {
            rest = text.dropFirst(7)
        } else {
            return false
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.contains("@") else { return false }
        return isHostAndOptionalPort(authority)
    }

    /// `host`, `host:port`, `[ipv6]` or `[ipv6]:port`; host a name or an IPv4 address, port 1–65535.
    public static func isHostAndOptionalPort(_ text: Substring) -> Bool {
        isValidHostAndOptionalPort(text)
    }

    /// An LDH host name (letters, digits and inner hyphens in labels of 1–63 bytes, 253 bytes at
    /// most, last label not all digits).
    public static func isHostName<S: StringProtocol>(_ text: S) -> Bool { isValidHostName(text) }

    /// A dotted-quad IPv4 address in canonical form (no leading zeros).
    public static func isIPv4Address<S: StringProtocol>(_ text: S) -> Bool {
        BridgeAddress.canonicalIPv4(Substring(text)) == String(text)
    }

    /// Standard base64 (A–Z a–z 0–9 + /) without padding; nil on any other character or an
    /// impossible length. Written out because argument checks must not depend on Foundation's
    /// tolerance for whitespace and padding.
    public static func decodeBase64(_ text: Substring) -> [UInt8]? {
        var bits: UInt32 = 0
        var bitCount = 0
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count * 3 / 4)
        for byte in text.utf8 {
            let value: UInt8
            switch byte {
            case 65...90: value = byte - 65
            case 97...122: value = byte - 97 + 26
            case 48...57: value = byte - 48 + 52
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            default: return nil
            }
            bits = (bits << 6) | UInt32(value)
            bitCount += 6
            if bitCount >= 8 {
                bitCount -= 8
                output.append(UInt8(truncatingIfNeeded: bits >> UInt32(bitCount)))
                bits &= (1 << UInt32(bitCount)) - 1
            }
        }
        // A single leftover character (6 bits) cannot encode a byte.
        if text.utf8.count % 4 == 1 { return nil }
        return output
    }

    /// A ClientHello name of lyrebird's common/utlsutil (any case), or `none`; the empty name only
    /// when `allowEmpty` (webtunnel reads it as hellorandomizednoalpn, meek_lite refuses it).
    public static func isLyrebirdUTLSName(_ name: String, allowEmpty: Bool) -> Bool {
        let lower = name.lowercased()
        if lower.isEmpty { return allowEmpty }
        if ["none", "hellorandomized", "hellorandomizedalpn", "hellorandomizednoalpn", "helloandroid_11"].contains(lower) { return true }
        for family in ["hellochrome_", "hellofirefox_", "helloios_", "helloedge_", "hellosafari_", "hello360_", "helloqq_"]
        where lower.hasPrefix(family) {
            let rest = lower.dropFirst(family.count)
            return !rest.isEmpty && rest.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == UInt8(ascii: "_") }
        }
        return false
    }
}

func isValidHostAndOptionalPort(_ text: Substring) -> Bool {
    var host = text
    var port: Substring?
    if text.hasPrefix("[") {
        guard let close = text.firstIndex(of: "]") else { return false }
        host = text[text.index(after: text.startIndex)..<close]
        let after = text[text.index(after: close)...]
        if !after.isEmpty {
            guard after.hasPrefix(":") else { return false }
            port = after.dropFirst()
        }
        guard BridgeAddress.canonicalIPv6(String(host)) != nil else { return false }
    } else {
        if let colon = text.firstIndex(of: ":") {
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        guard BridgeAddress.canonicalIPv4(host) != nil || isValidHostName(host) else { return false }
    }
    if let port {
        guard !port.isEmpty, port.utf8.count <= 5, port.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
              let value = Int(port), value >= 1, value <= 65535 else { return false }
    }
    return true
}
