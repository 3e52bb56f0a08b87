import PosternSystem

// The codes of the DoT and DoH resolver links (DoTLink, DoHLink), in their own extension so that the
// session's codes in DnsttError.swift and these merge without touching the same lines. Messages say
// "the resolver" and never hold its name, address or URL (on a censored network the resolver a
// bridge line names is part of the secret).
extension DnsttError.Code {
    /// The system resolver found no address for the resolver's name, or did not answer in time.
    public static let resolverLookupFailed = Self("resolver-lookup-failed")
    /// No address of the resolver accepted a TCP connection (through the upstream proxy, if any).
    public static let resolverConnectFailed = Self("resolver-connect-failed")
    /// The TLS handshake with the resolver failed or did not finish within its deadline.
    public static let resolverTLSFailed = Self("resolver-tls-failed")
    /// The link was closed (by its owner) before or while the call ran.
    public static let resolverLinkClosed = Self("resolver-link-closed")
    /// The DoH URL is not an https URL with a host (the argument rules check it; the link checks
    /// again because it is built from a string).
    public static let dohURLUnusable = Self("doh-url-unusable")
    /// A DoH answer over HTTP/1.1 that breaks RFC 9112's framing (the connection is closed and
    /// the query lost; KCP retransmits).
    public static let dohResponseMalformed = Self("doh-response-malformed")
    /// A DoH answer past a cap (its body over 64000 bytes, a chunk line or trailers too long).
    public static let dohResponseTooLarge = Self("doh-response-too-large")
}
