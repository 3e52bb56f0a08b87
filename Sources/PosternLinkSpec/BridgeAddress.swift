#if canImport(Glibc)
import Glibc
import PosternSystem
#elseif canImport(Darwin)
import Darwin
#endif

/// The `host:port` word of a bridge line.
///
/// tor itself accepts only IP literals here (IPv6 in brackets). Some transports ignore the address
/// and find their server another way (snowflake through the broker, meek_lite and webtunnel through
/// the `url=` host), so for those a host name is tolerated; the renderer gives such bridges a
/// placeholder IP when writing tor's configuration.
public struct BridgeAddress: Hashable, Sendable, CustomStringConvertible, LosslessStringConvertible, RedactableDescription {
    public enum Host: Hashable, Sendable {
        /// Dotted-quad text, canonical (no leading zeros).
        case ipv4(String)
        /// Canonical compressed lower-case text, without brackets.
        case ipv6(String)
        /// A DNS name, lower-cased. Only for transports that ignore the address.
        case name(String)
    }

    /// The port tor assumes when a bridge line gives none.
    public static let defaultPort: UInt16 = 443

    public let host: Host
    public let port: UInt16

    public init(host: Host, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `a.b.c.d:port`, `[v6]:port` or (when `allowingHostName`) `name:port`. A missing port
    /// means 443, as in tor; `portWasMissing` tells the caller so it can warn.
    public init(validating text: String, allowingHostName: Bool = false) throws(BridgeLineError) {
        let parsed = try Self.parse(text, allowingHostName: allowingHostName)
        self = parsed.address
    }

    public init?(_ description: String) {
        guard let value = try? BridgeAddress(validating: description, allowingHostName: true) else { return nil }
        self = value
    }

    public var isHostName: Bool {
        if case .name = host { return true }
        return false
    }

    public var hostText: String {
        switch host {
        case .ipv4(let text), .name(let text): return text
        case .ipv6(let text): return "[\(text)]"
        }
    }

    public var description: String { "\(hostText):\(port)" }

    public func description(policy: LoggingPolicy) -> String { policy.reveal(description) }

    static func parse(_ text: String, allowingHostName: Bool) throws(BridgeLineError) -> (address: BridgeAddress, portWasMissing: Bool) {
        func fail(_ code: BridgeLineError.Code, _ message: String) -> BridgeLineError {
            BridgeLineError(code: code, kind: .invalidInput, message: message)
        }
        let hostPart: Substring
        let portPart: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                throw fail(.badAddress, "an IPv6 address needs a closing bracket, like [2001:db8::1]:443")
            }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            if rest.isEmpty {
                portPart = nil
            } else if rest.hasPrefix(":") {
                portPart = rest.dropFirst()
            } else {
                throw fail(.badAddress, "expected :port after the bracketed IPv6 address")
            }
            guard let canonical = canonicalIPv6(String(hostPart)) else {
                throw fail(.badAddress, "not a valid IPv6 address")
            }
            let port = try parsePort(portPart)
            return (BridgeAddress(host: .ipv6(canonical), port: port ?? defaultPort), port == nil)
        }

        let colonCount = text.utf8.filter { $0 == UInt8(ascii: ":") }.count
        if colonCount > 1 {
            throw fail(.unbracketedIPv6, "IPv6 addresses must be in brackets, like [2001:db8::1]:443")
        }
        if let colon = text.firstIndex(of: ":") {
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        } else {
            hostPart = text[...]
            portPart = nil
        }
        guard !hostPart.isEmpty else { throw fail(.badAddress, "the address has no host part") }
        let port = try parsePort(portPart)
        if let ipv4 = canonicalIPv4(hostPart) {
            return (BridgeAddress(host: .ipv4(ipv4), port: port ?? defaultPort), port == nil)
        }
        let looksNumeric = hostPart.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || $0 == UInt8(ascii: ".") }
        if looksNumeric {
            throw fail(.badAddress, "not a valid IPv4 address (four numbers from 0 to 255, no leading zeros)")
        }
        guard isValidHostName(hostPart) else {
            throw fail(.badAddress, "not an IPv4 address, a bracketed IPv6 address or a host name")
        }
        guard allowingHostName else {
            throw fail(.hostNameNotAllowed, "tor needs an IP address here, not a host name")
        }
        return (BridgeAddress(host: .name(hostPart.lowercased()), port: port ?? defaultPort), port == nil)
    }

    private static func parsePort(_ text: Substring?) throws(BridgeLineError) -> UInt16? {
        guard let text else { return nil }
        guard !text.isEmpty, text.utf8.count <= 5, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
              let value = Int(text), value >= 1, value <= 65535 else {
            throw BridgeLineError(code: .badPort, kind: .invalidInput, message: "the port must be a number from 1 to 65535")
        }
        return UInt16(value)
    }

    static func canonicalIPv4(_ text: Substring) -> String? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var octets: [Int] = []
        for part in parts {
            guard !part.isEmpty, part.utf8.count <= 3, part.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
            // Leading zeros are refused: some parsers read them as octal, so they are ambiguous.
            if part.utf8.count > 1 && part.utf8.first == UInt8(ascii: "0") { return nil }
            guard let value = Int(part), value <= 255 else { return nil }
            octets.append(value)
        }
        return octets.map(String.init).joined(separator: ".")
    }

    static func canonicalIPv6(_ text: String) -> String? {
        guard !text.isEmpty, text.utf8.count <= 45,
              text.utf8.allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }) else { return nil }
        var storage = in6_addr()
        guard inet_pton(AF_INET6, text, &storage) == 1 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        guard inet_ntop(AF_INET6, &storage, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// LDH host name: labels of letters, digits and hyphens (not at either end), 1–63 bytes each,
/// at most 253 bytes overall, and not all-numeric in the last label (which would be a bad IPv4).
func isValidHostName<S: StringProtocol>(_ text: S) -> Bool {
    let bytes = Array(text.utf8)
    guard !bytes.isEmpty, bytes.count <= 253 else { return false }
    let labels = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    for label in labels {
        guard !label.isEmpty, label.count <= 63,
              label.first != UInt8(ascii: "-"), label.last != UInt8(ascii: "-") else { return false }
        for byte in label {
            let ok = (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || byte == UInt8(ascii: "-")
            if !ok { return false }
        }
    }
    if let last = labels.last, last.allSatisfy({ $0 >= 48 && $0 <= 57 }) { return false }
    return true
}
