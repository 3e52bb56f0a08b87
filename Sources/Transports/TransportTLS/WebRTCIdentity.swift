internal import CNSS
internal import CNSSShim
import TransportBase

/// A WebRTC DTLS identity made the way Firefox makes one for each peer connection: an ECDSA P-256
/// key and a self-signed X.509 v3 certificate, subject and issuer CN of 32 random lower-case hex
/// characters, a random serial encoded from 32 bits, valid from a day ago for 31 days, no
/// extensions, signed ecdsa-with-SHA256 (docs/FINGERPRINTS.md, "DTLS server flight"). The key
/// never leaves NSS (a session object, never stored).
///
/// Immutable once made: NSS's certificate and key objects are reference counted and safe to use
/// from several threads.
public final class WebRTCIdentity: @unchecked Sendable {
    let certificate: UnsafeMutablePointer<CERTCertificate>
    let key: UnsafeMutablePointer<SECKEYPrivateKey>
    /// The certificate as sent in the DTLS Certificate message.
    public let certificateDER: [UInt8]
    /// SHA-256 of `certificateDER`: the SDP's `a=fingerprint:sha-256` (RFC 8122).
    public let sha256Fingerprint: [UInt8]

    public init() throws(TransportError) {
        if let failure = postern_nss_initialize() {
            throw TransportError(code: .tlsSetupFailed, kind: .internal, message: String(cString: failure))
        }
        var certificate: UnsafeMutablePointer<CERTCertificate>?
        var key: UnsafeMutablePointer<SECKEYPrivateKey>?
        guard postern_nss_webrtc_identity(&certificate, &key) == 1, let certificate, let key else {
            throw TransportError(code: .tlsSetupFailed, kind: .internal,
                                 message: "the WebRTC certificate could not be made (\(NSSError.current()))")
        }
        var count = 0
        let bytes = postern_nss_certificate_der(certificate, &count)
        let der = bytes.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
        var digest = [UInt8](repeating: 0, count: 32)
        guard !der.isEmpty, postern_nss_sha256(der, der.count, &digest) == 1 else {
            CERT_DestroyCertificate(certificate)
            SECKEY_DestroyPrivateKey(key)
            throw TransportError(code: .tlsSetupFailed, kind: .internal, message: "the WebRTC certificate could not be hashed")
        }
        self.certificate = certificate
        self.key = key
        certificateDER = der
        sha256Fingerprint = digest
    }

    deinit {
        CERT_DestroyCertificate(certificate)
        SECKEY_DestroyPrivateKey(key)
    }
}
