#if canImport(Glibc)
import Glibc
#endif

/// An IP literal and port: where a transport connects (the bridge's `IP:port`).
///
/// Only numeric IPv4 and IPv6 literals are accepted; names are never resolved here, so no lookup
/// can leak outside Tor. The description round-trips: `1.2.3.4:443`, `[2001:db8::1]:443`.
public struct TransportEndpoint: Hashable, Sendable, CustomStringConvertible, LosslessStringConvertible {
    /// 4 or 16 address bytes in network order.
    public let addressBytes: [UInt8]
    public let port: UInt16

    public var isIPv6: Bool { addressBytes.count == 16 }

    public init(ipv4 bytes: [UInt8], port: UInt16) throws(TransportError) {
        guard bytes.count == 4 else { throw Self.invalid("an IPv4 address has 4 bytes") }
        self.addressBytes = bytes
        self.port = port
    }

    public init(ipv6 bytes: [UInt8], port: UInt16) throws(TransportError) {
        guard bytes.count == 16 else { throw Self.invalid("an IPv6 address has 16 bytes") }
        self.addressBytes = bytes
        self.port = port
    }

    init(loopbackPort port: UInt16) {
        self.addressBytes = [127, 0, 0, 1]
        self.port = port
    }

    /// Parses `a.b.c.d:port` or `[v6]:port`.
    public init(parsing text: String) throws(TransportError) {
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw Self.invalid("missing ']' in an IPv6 address") }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw Self.invalid("missing ':port' after the address") }
            portPart = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw Self.invalid("missing ':port' after the address") }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        }
        guard !portPart.isEmpty, portPart.allSatisfy({ $0.isASCII && $0.isNumber }), let port = UInt16(portPart), port != 0 else {
            throw Self.invalid("the port must be a number from 1 to 65535")
        }
        if text.hasPrefix("[") {
            var address = in6_addr()
            guard inet_pton(AF_INET6, String(hostPart), &address) == 1 else { throw Self.invalid("not an IPv6 literal") }
            self.addressBytes = withUnsafeBytes(of: &address) { Array($0) }
        } else {
            var address = in_addr()
            guard inet_pton(AF_INET, String(hostPart), &address) == 1 else { throw Self.invalid("not an IPv4 literal") }
            self.addressBytes = withUnsafeBytes(of: &address) { Array($0) }
        }
        self.port = port
    }

    public init?(_ description: String) {
        guard let parsed = try? TransportEndpoint(parsing: description) else { return nil }
        self = parsed
    }

    public var description: String {
        if isIPv6 {
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            _ = addressBytes.withUnsafeBytes { inet_ntop(AF_INET6, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
            return "[\(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))]:\(port)"
        }
        return addressBytes.map(String.init).joined(separator: ".") + ":\(port)"
    }

    /// True for 127.0.0.0/8 and ::1.
    public var isLoopback: Bool {
        isIPv6 ? addressBytes == [UInt8](repeating: 0, count: 15) + [1] : addressBytes[0] == 127
    }

    func withSockAddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &address.sin6_addr) { $0.copyBytes(from: addressBytes) }
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyBytes(from: addressBytes) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    private static func invalid(_ reason: String) -> TransportError {
        TransportError(code: .invalidEndpoint, kind: .invalidInput, message: "invalid address: \(reason)")
    }
}
