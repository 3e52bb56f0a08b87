internal import CNSS
internal import CNSSShim
import TransportBase

/// One NSS DTLS socket on a datagram I/O layer (CNSSShim's cnssshim_datagram.h), configured with
/// a ``DTLSProfile`` and a ``WebRTCIdentity``: the only owner of the PRFileDesc, closed (both
/// layers freed) in deinit. The settings are Firefox's WebRTC transport layer's, applied through
/// NSS's public calls; what they produce on the wire is measured in docs/FINGERPRINTS.md.
///
/// Not thread-safe: its owner (``DTLSServerSocket``, ``DTLSClientSocket``) drives it alone.
final class NSSDatagramSocket {
    enum Role { case server, client }

    let descriptor: UnsafeMutablePointer<PRFileDesc>
    /// Kept alive as long as the socket: NSS holds references to its certificate and key.
    let identity: WebRTCIdentity

    init(role: Role, identity: WebRTCIdentity, profile: DTLSProfile) throws(TransportError) {
        try NSSSocketSetup.initializeNSS()
        guard let descriptor = postern_nss_datagram_socket(role == .server ? 1 : 0) else {
            throw NSSSocketSetup.failure("the NSS DTLS socket could not be created")
        }
        self.descriptor = descriptor
        self.identity = identity
        try apply(profile, role: role)
    }

    deinit {
        _ = PR_Close(descriptor)
    }

    private var nss: NSSSocketSetup { NSSSocketSetup(descriptor: descriptor) }

    private func apply(_ profile: DTLSProfile, role: Role) throws(TransportError) {
        let highest = profile.allowsDTLS13 ? SSL_LIBRARY_VERSION_TLS_1_3 : SSL_LIBRARY_VERSION_TLS_1_2
        try nss.versions(upTo: highest, "DTLS versions")
        try nss.prefer(cipherSuites: profile.cipherSuites, groups: profile.groups, signatureSchemes: profile.signatureSchemes)
        try nss.check(profile.srtpProfiles.withUnsafeBufferPointer {
            postern_nss_datagram_use_srtp(descriptor, $0.baseAddress, UInt32($0.count))
        }, "SRTP profiles")

        // As Firefox's WebRTC: no tickets, no cache (each peer connection stands alone), no
        // renegotiation, no false start, a fresh ECDHE key per handshake; NSS's locks off, since
        // the owner serialises every call. Extended master secret on, as Firefox's process sets it.
        try nss.option(SSL_ENABLE_SESSION_TICKETS, PR_FALSE, "session tickets")
        try nss.option(SSL_NO_CACHE, PR_TRUE, "session cache")
        try nss.option(SSL_ENABLE_RENEGOTIATION, Int32(SSL_RENEGOTIATE_NEVER), "renegotiation")
        try nss.option(SSL_ENABLE_FALSE_START, PR_FALSE, "false start")
        try nss.option(SSL_NO_LOCKS, PR_TRUE, "locks")
        try nss.option(SSL_REUSE_SERVER_ECDHE_KEY, PR_FALSE, "ECDHE key reuse")
        try nss.option(SSL_ENABLE_EXTENDED_MASTER_SECRET, PR_TRUE, "extended master secret")

        if !profile.applicationProtocols.isEmpty {
            let encoded = try NSSSocketSetup.lengthPrefixed(profile.applicationProtocols)
            try nss.option(SSL_ENABLE_NPN, PR_FALSE, "NPN")
            try nss.option(SSL_ENABLE_ALPN, PR_TRUE, "ALPN")
            try nss.offerApplicationProtocols(encoded)
        }

        switch role {
        case .server:
            try nss.check(SSL_ConfigServerCert(descriptor, identity.certificate, identity.key, nil, 0), "server certificate")
            // No CA names in the CertificateRequest: the peer's certificate is self-signed.
            let anchors = CERT_NewCertList()
            defer { if let anchors { CERT_DestroyCertList(anchors) } }
            try nss.check(SSL_SetTrustAnchors(descriptor, anchors), "trust anchors")
            try nss.option(SSL_REQUEST_CERTIFICATE, PR_TRUE, "certificate request")
            try nss.option(SSL_REQUIRE_CERTIFICATE, Int32(SSL_REQUIRE_ALWAYS), "certificate requirement")
        case .client:
            try nss.check(postern_nss_datagram_client_identity(descriptor, identity.certificate, identity.key), "client certificate")
            if profile.allowsDTLS13 {
                try nss.check(postern_nss_set_dtls13_version_workaround(descriptor, PR_TRUE), "DTLS 1.3 version workaround")
            }
        }
    }

    /// Starts the handshake; the peer's certificate must hash to `peerSHA256` (the SDP digest).
    func start(expectingPeerSHA256 peerSHA256: [UInt8], role: Role) throws(TransportError) {
        guard peerSHA256.count == 32 else {
            throw TransportError(code: .invalidArguments, kind: .invalidInput, message: "a SHA-256 certificate digest is 32 bytes")
        }
        try nss.check(postern_nss_datagram_expect_peer_sha256(descriptor, peerSHA256), "certificate hook")
        try nss.check(SSL_ResetHandshake(descriptor, role == .server ? PR_TRUE : PR_FALSE), "handshake start")
    }

    /// False (and the datagram dropped) when it is empty, too long or the inbound queue is full.
    func feed(_ datagram: [UInt8]) -> Bool {
        datagram.withUnsafeBufferPointer { postern_nss_datagram_feed(descriptor, $0.baseAddress, $0.count) == 1 }
    }

    var inboundCount: Int { postern_nss_datagram_inbound_count(descriptor) }

    /// Every datagram NSS wrote for the peer, oldest first.
    func takeOutbound() -> [[UInt8]] {
        var datagrams: [[UInt8]] = []
        while case let count = postern_nss_datagram_next_count(descriptor), count > 0 {
            let datagram = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
                let taken = postern_nss_datagram_take(descriptor, buffer.baseAddress, count)
                initialized = taken > 0 ? taken : 0
            }
            guard !datagram.isEmpty else { break }
            datagrams.append(datagram)
        }
        return datagrams
    }

    var peerVerified: Bool { postern_nss_datagram_peer_verified(descriptor) == 1 }

    var peerSHA256: [UInt8]? {
        var digest = [UInt8](repeating: 0, count: 32)
        return postern_nss_datagram_peer_sha256(descriptor, &digest) == 1 ? digest : nil
    }

    var srtpProfile: UInt16 { postern_nss_datagram_srtp_profile(descriptor) }

    /// (protocol version as NSS names it: 0x0303 for DTLS 1.2, 0x0304 for DTLS 1.3; suite).
    var channel: (version: UInt16, cipherSuite: UInt16) {
        var info = SSLChannelInfo()
        guard SSL_GetChannelInfo(descriptor, &info, UInt32(MemoryLayout<SSLChannelInfo>.size)) == SECSuccess else { return (0, 0) }
        return (info.protocolVersion, info.cipherSuite)
    }
}
