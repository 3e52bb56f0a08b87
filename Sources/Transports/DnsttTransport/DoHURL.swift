/// The parts of a DoH URL (`doh=` in a bridge line, RFC 8484 section 4.1's URI template without
/// variables: the query goes in a POST body) the link needs: where to connect, the HTTP authority
/// and the request target. Only `https://host[:port]/path[?query]`; a fragment is not sent
/// (RFC 3986 section 3.5), user info is refused (no DoH client sends credentials in the URL).
struct DoHURL: Sendable, Hashable {
    /// A name or an IP literal (IPv6 in brackets).
    let host: String
    let port: UInt16
    /// `host` or `host:port` when the port is not 443: `:authority` (h2) and `Host` (HTTP/1.1).
    let authority: String
    /// Origin-form request target: the path (at least "/") and the query if any.
    let target: String

    init(parsing text: String) throws(DnsttError) {
        func unusable(_ why: String) -> DnsttError {
            DnsttError(code: .dohURLUnusable, kind: .invalidInput, message: "the DoH URL \(why)")
        }
        let scheme = "https://"
        guard text.count <= 2048, text.utf8.count >= scheme.utf8.count,
              String(text.prefix(scheme.count)).lowercased() == scheme else { throw unusable("is not an https URL") }
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw unusable("contains spaces, control or non-ASCII characters") }
        var rest = Substring(text.dropFirst(scheme.count))
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authorityPart = rest[..<authorityEnd]
        var path = String(rest[authorityEnd...])
        if path.hasPrefix("?") { path = "/" + path }
        if path.isEmpty { path = "/" }
        guard !authorityPart.contains("@") else { throw unusable("has user information") }
        var host: Substring
        var portText: Substring?
        if authorityPart.hasPrefix("[") {
            guard let close = authorityPart.firstIndex(of: "]") else { throw unusable("has an unclosed IPv6 literal") }
            host = authorityPart[...close]
            let after = authorityPart[authorityPart.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw unusable("has characters after its IPv6 literal") }
                portText = after.dropFirst()
            }
        } else if let colon = authorityPart.firstIndex(of: ":") {
            host = authorityPart[..<colon]
            portText = authorityPart[authorityPart.index(after: colon)...]
        } else {
            host = authorityPart
        }
        guard !host.isEmpty, host != "[]" else { throw unusable("has no host") }
        var port: UInt16 = 443
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy(\.isASCII), portText.allSatisfy(\.isNumber),
                  let value = UInt16(portText), value > 0 else { throw unusable("has a port that is not 1-65535") }
            port = value
        }
        self.host = String(host)
        self.port = port
        authority = port == 443 ? String(host) : "\(host):\(port)"
        target = path
    }
}
