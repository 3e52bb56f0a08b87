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
        if let failure = postern_nss_initialize() {
            throw TransportError(code: .tlsSetupFailed, kind: .internal, message: String(cString: failure))
        }
        guard let descriptor = postern_nss_datagram_socket(role == .server ? 1 : 0) else {
            throw Self.setupFailure("the NSS DTLS socket could not be created")
        }
        self.descriptor = descriptor
        self.identity = identity
        try apply(profile, role: role)
    }

    deinit {
        _ = PR_Close(descriptor)
    }

    private static func setupFailure(_ step: String) -> TransportError {
        TransportError(code: .tlsSetupFailed, kind: .internal, message: "\(step) (\(NSSError.current()))")
    }

    private func check(_ status: SECStatus, _ step: String) throws(TransportError) {
        guard status == SECSuccess else { throw Self.setupFailure(step) }
    }

    private func option(_ option: Int32, _ value: Int32, _ step: String) throws(TransportError) {
        try check(SSL_OptionSet(descriptor, option, value), step)
    }

    private func apply(_ profile: DTLSProfile, role: Role) throws(TransportError) {
        let highest = profile.allowsDTLS13 ? SSL_LIBRARY_VERSION_TLS_1_3 : SSL_LIBRARY_VERSION_TLS_1_2
        var versions = SSLVersionRange(min: UInt16(SSL_LIBRARY_VERSION_TLS_1_2), max: UInt16(highest))
        try check(SSL_VersionRangeSet(descriptor, &versions), "DTLS versions")

        let implemented = SSL_GetImplementedCiphers()
        for index in 0..<Int(SSL_GetNumImplementedCiphers()) {
            guard let suite = implemented?[index] else { break }
            try check(SSL_CipherPrefSet(descriptor, Int32(suite), PR_FALSE), "cipher suites")
        }
        for suite in profile.cipherSuites {
            try check(SSL_CipherPrefSet(descriptor, Int32(suite), PR_TRUE), "cipher suite \(suite)")
        }
        try check(profile.cipherSuites.withUnsafeBufferPointer {
            postern_nss_set_cipher_order(descriptor, $0.baseAddress, UInt32($0.count))
        }, "cipher suite order")
        let groups = profile.groups.map { SSLNamedGroup(rawValue: UInt32($0)) }
        try check(groups.withUnsafeBufferPointer { SSL_NamedGroupConfig(descriptor, $0.baseAddress, UInt32($0.count)) }, "groups")
        let schemes = profile.signatureSchemes.map { SSLSignatureScheme(rawValue: UInt32($0)) }
        try check(schemes.withUnsafeBufferPointer { SSL_SignatureSchemePrefSet(descriptor, $0.baseAddress, UInt32($0.count)) },
                  "signature schemes")
        try check(profile.srtpProfiles.withUnsafeBufferPointer {
            postern_nss_datagram_use_srtp(descriptor, $0.baseAddress, UInt32($0.count))
        }, "SRTP profiles")

        // As Firefox's WebRTC: no tickets, no cache (each peer connection stands alone), no
        // renegotiation, no false start, a fresh ECDHE key per handshake; NSS's locks off, since
        // the owner serialises every call. Extended master secret on, as Firefox's process sets it.
        try option(SSL_ENABLE_SESSION_TICKETS, PR_FALSE, "session tickets")
        try option(SSL_NO_CACHE, PR_TRUE, "session cache")
        try option(SSL_ENABLE_RENEGOTIATION, Int32(SSL_RENEGOTIATE_NEVER), "renegotiation")
        try option(SSL_ENABLE_FALSE_START, PR_FALSE, "false start")
        try option(SSL_NO_LOCKS, PR_TRUE, "locks")
        try option(SSL_REUSE_SERVER_ECDHE_KEY, PR_FALSE, "ECDHE key reuse")
        try option(SSL_ENABLE_EXTENDED_MASTER_SECRET, PR_TRUE, "extended master secret")

        if !profile.applicationProtocols.isEmpty {
            var encoded: [UInt8] = []
            for name in profile.applicationProtocols {
                let bytes = Array(name.utf8)
                guard (1...255).contains(bytes.count) else {
                    throw TransportError(code: .invalidArguments, kind: .invalidInput, message: "an ALPN protocol name must be 1 to 255 bytes")
                }
                encoded += [UInt8(bytes.count)] + bytes
            }
            guard encoded.count <= 255 else {
                throw TransportError(code: .invalidArguments, kind: .invalidInput, message: "the ALPN list is longer than NSS accepts (255 bytes)")
            }
            try option(SSL_ENABLE_NPN, PR_FALSE, "NPN")
            try option(SSL_ENABLE_ALPN, PR_TRUE, "ALPN")
            try check(encoded.withUnsafeBufferPointer { SSL_SetNextProtoNego(descriptor, $0.baseAddress, UInt32($0.count)) }, "ALPN")
        }

        switch role {
        case .server:
            try check(SSL_ConfigServerCert(descriptor, identity.certificate, identity.key, nil, 0), "server certificate")
            // No CA names in the CertificateRequest: the peer's certificate is self-signed.
            let anchors = CERT_NewCertList()
            defer { if let anchors { CERT_DestroyCertList(anchors) } }
            try check(SSL_SetTrustAnchors(descriptor, anchors), "trust anchors")
            try option(SSL_REQUEST_CERTIFICATE, PR_TRUE, "certificate request")
            try option(SSL_REQUIRE_CERTIFICATE, Int32(SSL_REQUIRE_ALWAYS), "certificate requirement")
        case .client:
            try check(postern_nss_datagram_client_identity(descriptor, identity.certificate, identity.key), "client certificate")
            if profile.allowsDTLS13 {
                try check(postern_nss_set_dtls13_version_workaround(descriptor, PR_TRUE), "DTLS 1.3 version workaround")
            }
        }
    }

    /// Starts the handshake; the peer's certificate must hash to `peerSHA256` (the SDP digest).
    func start(expectingPeerSHA256 peerSHA256: [UInt8], role: Role) throws(TransportError) {
        guard peerSHA256.count == 32 else {
            throw TransportError(code: .invalidArguments, kind: .invalidInput, message: "a SHA-256 certificate digest is 32 bytes")
        }
        try check(postern_nss_datagram_expect_peer_sha256(descriptor, peerSHA256), "certificate hook")
        try check(SSL_ResetHandshake(descriptor, role == .server ? PR_TRUE : PR_FALSE), "handshake start")
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
