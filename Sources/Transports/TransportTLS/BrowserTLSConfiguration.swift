import TransportBase

#if canImport(Glibc)
import Glibc
#endif

/// One connection's TLS settings.
public struct BrowserTLSConfiguration: Sendable {
    /// The name (or IP literal) the certificate must match. A name is sent as SNI unless
    /// `sendsServerName` is false; an IP literal is never sent (RFC 6066 allows only host names)
    /// and is checked against the certificate's IP addresses. With domain fronting this is the
    /// front: the HTTP Host inside names the real service, as in the reference clients.
    public var serverName: String
    /// The protocols the caller can speak over this connection, in preference order: what ALPN
    /// offers, in this wire order, when the profile offers ALPN (``BrowserTLSProfile``: parrots
    /// and `randomized-alpn` always, `randomized-noalpn` never, `randomized` by a draw). Empty
    /// sends no ALPN extension whatever the profile.
    public var applicationProtocols: [String]
    /// The ClientHello recipe, resolved anew for every connection.
    public var profile: BrowserTLSProfile
    /// PEM CA certificates trusted in addition to the system's (the test bed's CA); nil: only the
    /// system trust store (OpenSSL's default paths, which honour SSL_CERT_FILE and SSL_CERT_DIR).
    public var caFile: String?
    /// False leaves SNI out for a name too (snowflake's `utls-nosni`); the name is still verified.
    public var sendsServerName: Bool
    /// The whole handshake ends by this, however the server drips its bytes.
    public var handshakeTimeout: Duration
    /// TLS 1.3 resumption, as a browser returning to a server: a ticket the server issued on an
    /// earlier connection in this process (same name, trust, profile and ALPN list) is offered
    /// once, when this connection's hello carries psk_key_exchange_modes. False: always a full
    /// handshake, and this connection's tickets are not kept.
    public var resumesSessions: Bool

    public init(serverName: String, applicationProtocols: [String] = ["h2", "http/1.1"], profile: BrowserTLSProfile = .firefoxESR,
                caFile: String? = nil, sendsServerName: Bool = true, handshakeTimeout: Duration = .seconds(20),
                resumesSessions: Bool = true) {
        self.serverName = serverName
        self.applicationProtocols = applicationProtocols
        self.profile = profile
        self.caFile = caFile
        self.sendsServerName = sendsServerName
        self.handshakeTimeout = handshakeTimeout
        self.resumesSessions = resumesSessions
    }

    /// Which tickets this configuration may use and keep (``ResumptionTokenCache``).
    var resumptionKey: ResumptionTokenCache.Key {
        ResumptionTokenCache.Key(serverName: bareServerName, sendsServerName: sendsServerName, caFile: caFile,
                                 profile: profile.name, applicationProtocols: applicationProtocols)
    }

    /// `serverName` without the brackets an IPv6 literal may come in.
    var bareServerName: String {
        serverName.hasPrefix("[") && serverName.hasSuffix("]") ? String(serverName.dropFirst().dropLast()) : serverName
    }

    var serverNameIsIPAddress: Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, bareServerName, &v4) == 1 || inet_pton(AF_INET6, bareServerName, &v6) == 1
    }

    /// ALPN as NSS's SSL_SetNextProtoNego takes it: length-prefixed names, where NSS moves the first
    /// to the end on the wire (it is NPN's fallback there), so the last wanted goes first.
    static func nssApplicationProtocols(_ applicationProtocols: [String]) throws(TransportError) -> [UInt8] {
        var names = applicationProtocols
        if let last = names.popLast() { names.insert(last, at: 0) }
        return try NSSSocketSetup.lengthPrefixed(names)
    }

    func validate() throws(TransportError) {
        guard !bareServerName.isEmpty, !bareServerName.utf8.contains(0) else {
            throw TransportError(code: .invalidArguments, kind: .invalidInput, message: "the TLS server name is empty or contains NUL")
        }
        _ = try Self.nssApplicationProtocols(applicationProtocols)
    }
}
