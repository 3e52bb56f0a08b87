import PosternLinkSpec
import TransportTLS

/// webtunnel's argument rules (lyrebird v0.5.0's parseArgs in transports/webtunnel):
/// the one implementation behind both the bridge-line check (PosternLinkSpec's line parser asks for it
/// through the rulebook) and `WebtunnelOptions(arguments:)`, which reads tor's SOCKS arguments at
/// dial time. Reasons never contain a value: the url is the bridge's secret.
public struct WebtunnelArgumentRules: BridgeArgumentRules {
    public init() {}

    public var transport: TransportName { .webtunnel }
    /// The client dials the url host; the bridge address is a placeholder.
    public var acceptsHostNameAddress: Bool { true }

    public func review(_ review: inout BridgeArgumentReview) throws(BridgeArgumentProblem) {
        _ = try Self.options(&review)
    }

    /// Checks the arguments and returns them typed.
    static func options(_ review: inout BridgeArgumentReview) throws(BridgeArgumentProblem) -> WebtunnelOptions {
        review.warnAboutUnknownKeys(known: ["url", "ver", "servername", "utls", "addr"])
        guard let url = review["url"] else {
            throw BridgeArgumentProblem(.missingURL, key: "url", "a webtunnel bridge needs url= (the https address with the secret path)")
        }
        guard BridgeArgumentSyntax.isHTTPURL(url) else {
            throw BridgeArgumentProblem(.badURL, key: "url", "url must be an http:// or https:// URL with a host")
        }
        let parts = urlParts(url)
        guard isValidEscapedPath(parts.path) else {
            throw BridgeArgumentProblem(.badURL, key: "url", "url's path has a character that must be percent-encoded, or a bad %-escape")
        }
        // "//x" would be read back by Go as a host, not a path; no real bridge line has one.
        guard !parts.path.hasPrefix("//") else {
            throw BridgeArgumentProblem(.badURL, key: "url", "url's path must not start with '//'")
        }
        let serverName: String
        if let name = review["servername"] {
            guard BridgeArgumentSyntax.isHostName(name) else {
                throw BridgeArgumentProblem(.badServerName, key: "servername", "servername must be a domain name")
            }
            serverName = name
        } else {
            serverName = parts.host
        }
        if let name = review["utls"] {
            guard BridgeArgumentSyntax.isLyrebirdUTLSName(name, allowEmpty: true) else {
                throw BridgeArgumentProblem(.badUTLS, key: "utls", "not a uTLS ClientHello name lyrebird knows (for example hellorandomizedalpn, or none)")
            }
        }
        // Every lyrebird name maps to a profile (TransportTLS's registry; absent or empty: lyrebird's
        // default, hellorandomizednoalpn).
        guard let tls = try? BrowserTLSProfile.forWebtunnel(utls: review["utls"]) else {
            throw BridgeArgumentProblem(.badUTLS, key: "utls", "not a ClientHello name Postern can send")
        }
        // ver= is what the server advertises; the reference client ignores it, and so do we.
        if review["addr"] != nil {
            review.warn(.unusedArgument, key: "addr", "the webtunnel client (lyrebird 0.5) does not read addr=; it connects to the url= host")
        }
        let target = "/" + (parts.path.hasPrefix("/") ? parts.path.dropFirst() : parts.path)
        return WebtunnelOptions(scheme: parts.scheme, urlHost: parts.host, port: parts.port, requestTarget: String(target),
                                serverName: serverName, tls: tls)
    }

    /// Scheme, host (without IPv6 brackets, as Go's `url.Hostname()`), port and escaped path of a
    /// URL that `BridgeArgumentSyntax.isHTTPURL` accepted. Query and fragment are dropped, as
    /// `url.EscapedPath()` leaves them out.
    private static func urlParts(_ text: String) -> (scheme: WebtunnelOptions.Scheme, host: String, port: UInt16, path: Substring) {
        let scheme: WebtunnelOptions.Scheme = text.lowercased().hasPrefix("https://") ? .https : .http
        let rest = text.dropFirst(scheme == .https ? 8 : 7)
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let pathEnd = rest[authorityEnd...].firstIndex { $0 == "?" || $0 == "#" } ?? rest.endIndex
        var host = authority
        var portText: Substring = ""
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = authority[authority.index(after: authority.startIndex)..<close]
            portText = authority[authority.index(after: close)...].drop { $0 == ":" }
        } else if let colon = authority.firstIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        // isHTTPURL has checked the port (1-65535).
        return (scheme, String(host), UInt16(portText) ?? scheme.defaultPort, rest[authorityEnd..<pathEnd])
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
}
