import TransportBase

/// One webtunnel bridge's arguments, validated before any network activity (spec §2, lyrebird
/// v0.5.0's parseArgs). Errors name the argument and the reason, never its value: the url is the
/// bridge's secret.
public struct WebtunnelOptions: Sendable, Hashable {
    public enum Scheme: String, Sendable, Hashable {
        case https, http
        var defaultPort: UInt16 { self == .https ? 443 : 80 }
    }

    public let scheme: Scheme
    /// The url's host as written, without brackets for IPv6 (Go's `url.Hostname()`): what is
    /// resolved.
    public let urlHost: String
    public let port: UInt16
    /// `/` + the escaped path without its leading `/`: the request target.
    public let requestTarget: String
    /// `servername=` or the url host: the TLS server name (SNI and certificate check) and the
    /// HTTP `Host` header.
    public let serverName: String
    /// The uTLS ClientHello asked for (lowercased; `hellorandomizednoalpn` for an empty
    /// `utls=`), nil for none. Not applied: see `WebtunnelTransport.dial`.
    public let utlsFingerprint: String?

    public init(arguments: TransportArguments) throws(TransportError) {
        guard let url = arguments["url"] else {
            throw Self.invalid("url", "a webtunnel bridge needs url= (the https address with the secret path)")
        }
        let parsed = try Self.parseURL(url)
        scheme = parsed.scheme
        urlHost = parsed.host
        port = parsed.port
        requestTarget = parsed.target
        if let name = arguments["servername"] {
            guard Self.isDomainName(name) else { throw Self.invalid("servername", "servername must be a domain name") }
            serverName = name
        } else {
            serverName = parsed.host
        }
        if let name = arguments["utls"] {
            let lower = name.lowercased()
            if lower == "none" {
                utlsFingerprint = nil
            } else if lower.isEmpty {
                utlsFingerprint = "hellorandomizednoalpn"
            } else {
                guard Self.isLyrebirdUTLSName(lower) else {
                    throw Self.invalid("utls", "not a uTLS ClientHello name lyrebird knows (for example hellorandomizedalpn, or none)")
                }
                utlsFingerprint = lower
            }
        } else {
            utlsFingerprint = nil
        }
        // ver= is what the server advertises; the reference client ignores it, and so do we.
        // addr= is not read by lyrebird v0.5.0 either (BridgeConfig warns about it).
    }

    /// True when `host` is an IP literal (no resolution, and an IP check instead of a name check).
    var serverNameIsIPLiteral: Bool { Self.ipv4Bytes(serverName) != nil || serverName.contains(":") }

    // MARK: parsing

    private static func parseURL(_ text: String) throws(TransportError) -> (scheme: Scheme, host: String, port: UInt16, target: String) {
        guard let separator = text.range(of: "://") else { throw invalid("url", "url must be an http:// or https:// URL") }
        guard let scheme = Scheme(rawValue: text[..<separator.lowerBound].lowercased()) else {
            throw invalid("url", "url must use https or http (lyrebird knows no other scheme)")
        }
        let rest = text[separator.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        // Query and fragment are dropped, as url.EscapedPath() leaves them out.
        let pathEnd = rest[authorityEnd...].firstIndex { $0 == "?" || $0 == "#" } ?? rest.endIndex
        let path = rest[authorityEnd..<pathEnd]
        guard !authority.contains("@") else { throw invalid("url", "url must not carry a user name or password") }
        var host = authority
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw invalid("url", "url has an IPv6 host without ']'") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("url", "url has text after its IPv6 host") }
                portText = after.dropFirst()
            }
            guard (try? TransportEndpoint(parsing: "[\(host)]:1")) != nil else { throw invalid("url", "url's IPv6 host is not an IPv6 address") }
        } else {
            if let colon = authority.firstIndex(of: ":") {
                host = authority[..<colon]
                portText = authority[authority.index(after: colon)...]
            }
            guard ipv4Bytes(String(host)) != nil || isDomainName(String(host)) else {
                throw invalid("url", "url's host must be a domain name or an IP address")
            }
        }
        var port = scheme.defaultPort
        if let portText {
            guard !portText.isEmpty, portText.utf8.count <= 5, portText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let value = UInt16(portText), value != 0 else {
                throw invalid("url", "url's port must be a number from 1 to 65535")
            }
            port = value
        }
        guard isValidEscapedPath(path) else {
            throw invalid("url", "url's path has a character that must be percent-encoded, or a bad %-escape")
        }
        // "//x" would be read back by Go as a host, not a path; no real bridge line has one.
        guard !path.hasPrefix("//") else { throw invalid("url", "url's path must not start with '//'") }
        let target = "/" + (path.hasPrefix("/") ? path.dropFirst() : path)
        return (scheme, String(host), port, String(target))
    }

    /// The bytes Go's url.EscapedPath() returns verbatim: unreserved, sub-delims, ':', '@', '/',
    /// '[', ']' and well-formed %-escapes.
    private static func isValidEscapedPath(_ path: Substring) -> Bool {
        let bytes = Array(path.utf8)
        let allowed = Array("-._~!$&'()*+,;=:@/[]".utf8)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, isHex(bytes[index + 1]), isHex(bytes[index + 2]) else { return false }
                index += 3
                continue
            }
            let alphanumeric = (byte >= 0x30 && byte <= 0x39) || ((byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A)
            guard alphanumeric || allowed.contains(byte) else { return false }
            index += 1
        }
        return true
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || ((byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x66)
    }

    static func ipv4Bytes(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.utf8.count <= 3, part.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let value = UInt8(part) else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    /// Letters, digits, '-' and '_' in dot-separated labels of 1 to 63 bytes, 253 bytes at most;
    /// a final dot is allowed. ASCII only: Go would turn other names into punycode.
    static func isDomainName(_ text: String) -> Bool {
        var name = Substring(text)
        if name.hasSuffix(".") { name = name.dropLast() }
        guard !name.isEmpty, name.utf8.count <= 253 else { return false }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard ipv4Bytes(String(name)) == nil else { return false }
        return labels.allSatisfy { label in
            !label.isEmpty && label.utf8.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || (($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x7A) || $0 == 0x2D || $0 == 0x5F }
        }
    }

    /// lyrebird's common/utlsutil names, lowercased.
    private static func isLyrebirdUTLSName(_ lower: String) -> Bool {
        if ["hellorandomized", "hellorandomizedalpn", "hellorandomizednoalpn", "helloandroid_11"].contains(lower) { return true }
        for family in ["hellochrome_", "hellofirefox_", "helloios_", "helloedge_", "hellosafari_", "hello360_", "helloqq_"]
        where lower.hasPrefix(family) {
            let rest = lower.dropFirst(family.count)
            return !rest.isEmpty && rest.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F }
        }
        return false
    }

    private static func invalid(_ key: String, _ reason: String) -> TransportError {
        TransportError(code: .invalidArguments, kind: .invalidInput, message: "webtunnel argument \(key): \(reason)")
    }
}
