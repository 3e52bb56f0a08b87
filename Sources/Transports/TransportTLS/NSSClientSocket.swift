internal import CNSS
internal import CNSSShim
import TransportBase

/// One NSS TLS client socket on a memory I/O layer (CNSSShim), configured with a profile: the only
/// owner of the PRFileDesc, closed (both layers freed) in deinit.
///
/// Not thread-safe: BrowserTLSStream calls it only under its lock. NSS documents one thread at a
/// time per socket as safe; different sockets may be used on different threads at once.
final class NSSClientSocket {
    let descriptor: UnsafeMutablePointer<PRFileDesc>
    /// Kept alive as long as the socket: NSS holds a raw pointer to it for the certificate hook.
    private let verifier: ServerCertificateVerifier
    /// The hello this connection sends: the profile resolved for this socket alone, so a randomized
    /// profile draws anew per connection.
    let shape: ClientHelloShape
    /// Receives the server's session tickets; kept alive as long as the socket, as the verifier.
    private let ticketSink: TicketSink?

    /// `resuming` false keeps the ticket cache out of it whatever the configuration says (a hello
    /// made only to be shown must not use up a ticket).
    init(configuration: BrowserTLSConfiguration, verifier: ServerCertificateVerifier, resuming: Bool = true) throws(TransportError) {
        var generator = SystemRandomNumberGenerator()
        shape = configuration.profile.resolve(applicationProtocols: configuration.applicationProtocols, using: &generator)
        try NSSSocketSetup.initializeNSS()
        guard let descriptor = postern_nss_memory_client_socket() else {
            throw NSSSocketSetup.failure("the NSS socket could not be created")
        }
        self.descriptor = descriptor
        self.verifier = verifier
        // TLS 1.3 resumption needs psk_key_exchange_modes in the hello; without it nothing to keep.
        let resumes = resuming && configuration.resumesSessions && shape.pskKeyExchangeModes
        ticketSink = resumes ? TicketSink(cache: .shared, key: configuration.resumptionKey) : nil
        try apply(configuration)
        if let ticketSink { try resume(with: ticketSink) }
    }

    /// Collects tickets into the cache and offers one kept from an earlier connection, if any.
    /// After SSL_ResetHandshake, which would drop a session set before it.
    private func resume(with sink: TicketSink) throws(TransportError) {
        let callback: @convention(c) (UnsafeMutablePointer<PRFileDesc>?, UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?) -> SECStatus = {
            socket, token, count, context in
            guard let socket, let token, let context, count > 0 else { return SECSuccess }
            // TLS 1.3 sessions only. A TLS 1.2 resumption derives its keys from the old master
            // secret with no fresh ECDHE (no forward secrecy for it), puts the ticket in
            // session_ticket, and NSS 3.87 fails the handshake (SSL_ERROR_NO_CYPHER_OVERLAP)
            // when a session made with extended_master_secret meets a hello without it, which a
            // randomized profile draws one time in ten (seen against the bed's nginx 1.22).
            var info = SSLChannelInfo()
            guard SSL_GetChannelInfo(socket, &info, UInt32(MemoryLayout<SSLChannelInfo>.size)) == SECSuccess,
                  info.protocolVersion >= UInt16(SSL_LIBRARY_VERSION_TLS_1_3) else { return SECSuccess }
            let bytes = [UInt8](UnsafeBufferPointer(start: token, count: Int(count)))
            Unmanaged<TicketSink>.fromOpaque(context).takeUnretainedValue().keep(bytes)
            return SECSuccess
        }
        try nss.check(postern_nss_set_resumption_token_callback(descriptor, callback, Unmanaged.passUnretained(sink).toOpaque()),
                      "session ticket callback")
        guard var token = sink.cache.take(for: sink.key, now: Int64(PR_Now())) else { return }
        // Used once whatever happens: NSS copies it, and a token it refuses is of no further use.
        _ = token.withUnsafeBufferPointer { postern_nss_set_resumption_token(descriptor, $0.baseAddress, UInt32($0.count)) }
        for index in token.indices { token[index] = 0 }
    }

    deinit {
        _ = SSL_InvalidateSession(descriptor)  // its cache entry, so the cache does not grow per connection
        _ = PR_Close(descriptor)
    }

    private var nss: NSSSocketSetup { NSSSocketSetup(descriptor: descriptor) }

    /// The resolved hello (docs/TLS-LIBRARY-CHOICE.md, "Shaping recipe"), its ALPN, then the
    /// name and the certificate hook.
    private func apply(_ configuration: BrowserTLSConfiguration) throws(TransportError) {
        let profile = shape
        try nss.versions(upTo: SSL_LIBRARY_VERSION_TLS_1_3, "TLS versions")
        try nss.prefer(cipherSuites: profile.cipherSuites, groups: profile.groups, signatureSchemes: profile.signatureSchemes)
        try nss.check(SSL_SendAdditionalKeyShares(descriptor, profile.additionalKeyShares), "key shares")

        // NSS's own client session cache is never used: resumption goes through tickets kept by
        // ResumptionTokenCache (resume(with:)). The cache stays on when the hello carries
        // psk_key_exchange_modes, because with SSL_NO_CACHE NSS leaves that extension out
        // (measured: JA4 t13d1615 instead of Firefox's count); a peer ID of its own makes every
        // lookup miss, and deinit drops the entry. A hello without it switches the cache off.
        if profile.pskKeyExchangeModes {
            let peerID = (0..<16).map { _ in String(UInt8.random(in: 0...255), radix: 16) }.joined()
            try nss.check(SSL_SetSockPeerID(descriptor, "postern-\(peerID)"), "session cache key")
        } else {
            try nss.option(SSL_NO_CACHE, PR_TRUE, "session cache")
        }
        try nss.option(SSL_ENABLE_SESSION_TICKETS, profile.sessionTickets ? PR_TRUE : PR_FALSE, "session tickets")
        try nss.option(SSL_ENABLE_OCSP_STAPLING, profile.ocspStapling ? PR_TRUE : PR_FALSE, "OCSP stapling")
        try nss.option(SSL_ENABLE_SIGNED_CERT_TIMESTAMPS, profile.signedCertificateTimestamps ? PR_TRUE : PR_FALSE, "SCT")
        try nss.option(SSL_ENABLE_EXTENDED_MASTER_SECRET, profile.extendedMasterSecret ? PR_TRUE : PR_FALSE, "extended master secret")
        try nss.option(SSL_ENABLE_RENEGOTIATION, Int32(SSL_RENEGOTIATE_REQUIRES_XTN), "renegotiation")
        try nss.option(SSL_ENABLE_DELEGATED_CREDENTIALS, profile.delegatedCredentials ? PR_TRUE : PR_FALSE, "delegated credentials")
        if let limit = profile.recordSizeLimit {
            try nss.option(SSL_RECORD_SIZE_LIMIT, Int32(limit), "record size limit")
        }
        try nss.option(SSL_ENABLE_TLS13_COMPAT_MODE, profile.compatibilityMode ? PR_TRUE : PR_FALSE, "compatibility mode")
        try nss.option(SSL_ENABLE_POST_HANDSHAKE_AUTH, profile.postHandshakeAuthentication ? PR_TRUE : PR_FALSE, "post-handshake authentication")
        try nss.check(postern_nss_enable_ech_grease(descriptor, profile.echGrease ? PR_TRUE : PR_FALSE), "ECH GREASE")

        let protocols = try BrowserTLSConfiguration.nssApplicationProtocols(profile.applicationProtocols)
        try nss.option(SSL_ENABLE_ALPN, protocols.isEmpty ? PR_FALSE : PR_TRUE, "ALPN")
        if !protocols.isEmpty {
            try nss.offerApplicationProtocols(protocols)
        }

        // Always set (NSS 3.87 crashed with ECH GREASE and no URL, TLS-LIBRARY-CHOICE.md). NSS
        // leaves SNI out for an IP literal and refuses hooks on server_name, so a name that must
        // not be sent is replaced by the unspecified address: NSS uses the URL only for SNI, its
        // session cache (off) and its own name check (replaced by ServerCertificateVerifier).
        let url = configuration.sendsServerName || configuration.serverNameIsIPAddress ? configuration.bareServerName : "0.0.0.0"
        try nss.check(SSL_SetURL(descriptor, url), "server name")

        let hook: SSLAuthCertificate = { argument, socket, _, _ in
            guard let argument, let socket else { return SECFailure }
            return Unmanaged<ServerCertificateVerifier>.fromOpaque(argument).takeUnretainedValue().verify(socket)
        }
        try nss.check(SSL_AuthCertificateHook(descriptor, hook, Unmanaged.passUnretained(verifier).toOpaque()), "certificate hook")
        try nss.check(SSL_ResetHandshake(descriptor, PR_FALSE), "handshake start")
    }

    /// Moves what NSS wrote for the peer out of the memory layer.
    func takeOutbound() -> [UInt8] {
        let count = postern_nss_outbound_count(descriptor)
        guard count > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = postern_nss_take_outbound(descriptor, buffer.baseAddress, count)
        }
    }

    /// False when the bytes would exceed the memory layer's inbound capacity.
    func feed(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { postern_nss_feed(descriptor, $0.baseAddress, $0.count) == 1 }
    }

    func feedEnd() { postern_nss_feed_end(descriptor) }

    var negotiatedApplicationProtocol: String? {
        var state = SSL_NEXT_PROTO_NO_SUPPORT
        var length: UInt32 = 0
        var buffer = [UInt8](repeating: 0, count: 255)
        guard SSL_GetNextProto(descriptor, &state, &buffer, &length, UInt32(buffer.count)) == SECSuccess,
              state == SSL_NEXT_PROTO_SELECTED || state == SSL_NEXT_PROTO_NEGOTIATED, length > 0 else { return nil }
        return String(decoding: buffer.prefix(Int(length)), as: UTF8.self)
    }

    /// (protocol version, cipher suite) as IANA numbers, and whether a ticket resumed the session,
    /// after the handshake.
    var channel: (version: UInt16, cipherSuite: UInt16, resumed: Bool) {
        var info = SSLChannelInfo()
        guard SSL_GetChannelInfo(descriptor, &info, UInt32(MemoryLayout<SSLChannelInfo>.size)) == SECSuccess else { return (0, 0, false) }
        return (info.protocolVersion, info.cipherSuite, info.resumed == PR_TRUE)
    }
}

/// Where NSS hands a connection's session tickets: into the cache under the connection's key.
private final class TicketSink: Sendable {
    let cache: ResumptionTokenCache
    let key: ResumptionTokenCache.Key

    init(cache: ResumptionTokenCache, key: ResumptionTokenCache.Key) {
        self.cache = cache
        self.key = key
    }

    func keep(_ token: [UInt8]) {
        let expiry = token.withUnsafeBufferPointer { postern_nss_resumption_token_expiry($0.baseAddress, UInt32($0.count)) }
        cache.store(token, expiry: expiry, for: key, now: Int64(PR_Now()))
    }
}

/// NSPR's thread-local error, read right after the failing call on the same thread.
struct NSSError: CustomStringConvertible {
    let code: PRErrorCode

    static func current() -> NSSError { NSSError(code: PR_GetError()) }

    var isWouldBlock: Bool { code == PR_WOULD_BLOCK_ERROR }

    var description: String {
        let name = PR_ErrorToName(code).map { String(cString: $0) } ?? "error \(code)"
        let text = PR_ErrorToString(code, PRLanguageCode(PR_LANGUAGE_I_DEFAULT)).map { String(cString: $0) } ?? ""
        return text.isEmpty ? name : "\(name): \(text)"
    }
}
