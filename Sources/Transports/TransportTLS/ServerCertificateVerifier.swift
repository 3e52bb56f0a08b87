internal import CNSS
internal import CNSSShim
internal import COpenSSL
import Synchronization

/// Verifies the server's chain and name for NSS's certificate hook, with OpenSSL: the same trust
/// (system store plus an optional CA file) and the same checks as the transports' OpenSSL
/// streams, so switching library changes the hello, not what is trusted. NSS itself still checks
/// the handshake signature with the leaf's key.
final class ServerCertificateVerifier: Sendable {
    /// Largest chain accepted, in DER bytes and in certificates (real chains are a few kB and 2–4
    /// certificates; NSS caps one handshake message at 128 kB before this is reached).
    static let chainByteLimit = 128 * 1024
    static let chainCertificateLimit = 10

    /// X509_PURPOSE_SSL_SERVER and X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS from OpenSSL 3's
    /// x509v3.h, which COpenSSL's header does not include.
    private static let purposeSSLServer: Int32 = 2
    private static let noPartialWildcards: UInt32 = 0x4

    private let name: String
    private let nameIsIPAddress: Bool
    private let caFile: String?
    private let verifiedChains: VerifiedChainCache
    /// Why the last verification failed, for the error the handshake throws.
    private let rejection = Mutex<String?>(nil)

    init(name: String, nameIsIPAddress: Bool, caFile: String?, verifiedChains: VerifiedChainCache = .shared) {
        self.name = name
        self.nameIsIPAddress = nameIsIPAddress
        self.caFile = caFile
        self.verifiedChains = verifiedChains
    }

    var rejectionReason: String? { rejection.withLock { $0 } }

    /// The hook's body: SECSuccess when the chain verifies, else SECFailure with an NSS error
    /// set, which makes NSS send bad_certificate and fail the handshake.
    func verify(_ socket: UnsafeMutablePointer<PRFileDesc>) -> SECStatus {
        let outcome = check(socket)
        rejection.withLock { $0 = outcome?.reason }
        guard let outcome else { return SECSuccess }
        PR_SetError(outcome.nssError, 0)
        return SECFailure
    }

    private struct Rejection {
        let reason: String
        let nssError: PRErrorCode
    }

    private func check(_ socket: UnsafeMutablePointer<PRFileDesc>) -> Rejection? {
        // Real chains fit in the cache's limit; only a larger one is copied again into the
        // largest buffer accepted.
        var (chain, status) = Self.peerChain(socket, capacity: VerifiedChainCache.chainByteLimit)
        if status == -2 { (chain, status) = Self.peerChain(socket, capacity: Self.chainByteLimit) }
        guard status >= 0 else {
            return Rejection(reason: status == -2 ? "the certificate chain is larger than \(Self.chainByteLimit) bytes" : "the server sent no certificate",
                             nssError: PRErrorCode(truncatingIfNeeded: SSL_ERROR_BAD_CERTIFICATE.rawValue))
        }
        let key = VerifiedChainCache.Key(name: name, nameIsIPAddress: nameIsIPAddress, caFile: caFile,
                                         systemStore: [TrustStoreCache.environment("SSL_CERT_FILE"), TrustStoreCache.environment("SSL_CERT_DIR")],
                                         chain: chain)
        if verifiedChains.contains(key) { return nil }
        let rejection = verify(chain: chain, used: chain.count)
        if rejection == nil { verifiedChains.insert(key) }
        return rejection
    }

    /// The peer's chain as postern_nss_copy_peer_chain lays it out, and its status (the bytes
    /// used, -1 no chain, -2 larger than `capacity`). The buffer is not zeroed first: NSS writes
    /// every byte that is kept (zeroing the 128 kB limit was ~130,000 instructions a handshake,
    /// docs/PERFORMANCE.md).
    private static func peerChain(_ socket: UnsafeMutablePointer<PRFileDesc>, capacity: Int) -> (chain: [UInt8], status: Int) {
        var status = -1
        let chain = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            status = postern_nss_copy_peer_chain(socket, buffer.baseAddress, buffer.count)
            initialized = max(status, 0)
        }
        return (chain, status)
    }

    private func verify(chain buffer: [UInt8], used: Int) -> Rejection? {
        var certificates: [OpaquePointer] = []
        defer { certificates.forEach { X509_free($0) } }
        var offset = 0
        while offset + 4 <= used {
            let length = buffer[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            offset += 4
            guard length <= used - offset, certificates.count < Self.chainCertificateLimit else {
                return Rejection(reason: "the certificate chain has more than \(Self.chainCertificateLimit) certificates",
                                 nssError: PRErrorCode(truncatingIfNeeded: SSL_ERROR_BAD_CERTIFICATE.rawValue))
            }
            let parsed = buffer.withUnsafeBufferPointer { all -> OpaquePointer? in
                var cursor: UnsafePointer<UInt8>? = all.baseAddress.map { $0 + offset }
                return d2i_X509(nil, &cursor, length)
            }
            guard let parsed else {
                ERR_clear_error()
                return Rejection(reason: "a certificate in the chain could not be parsed", nssError: PRErrorCode(truncatingIfNeeded: SSL_ERROR_BAD_CERTIFICATE.rawValue))
            }
            certificates.append(parsed)
            offset += length
        }
        guard let leaf = certificates.first else {
            return Rejection(reason: "the server sent no certificate", nssError: PRErrorCode(truncatingIfNeeded: SSL_ERROR_BAD_CERTIFICATE.rawValue))
        }
        return verifyWithOpenSSL(leaf: leaf, intermediates: certificates.dropFirst())
    }

    private func verifyWithOpenSSL(leaf: OpaquePointer, intermediates: ArraySlice<OpaquePointer>) -> Rejection? {
        // OpenSSL's error queue is per thread; everything here runs on the hook's thread and is
        // cleared before returning.
        defer { ERR_clear_error() }
        let trust: TrustStore
        switch TrustStoreCache.store(caFile: caFile) {
        case .success(let loaded): trust = loaded
        case .failure(let failure):
            return Rejection(reason: failure.reason, nssError: PRErrorCode(truncatingIfNeeded: SEC_ERROR_UNTRUSTED_ISSUER.rawValue))
        }
        let store = trust.pointer
        guard let untrusted = OPENSSL_sk_new_null() else { return Rejection(reason: "no memory", nssError: PRErrorCode(truncatingIfNeeded: SEC_ERROR_NO_MEMORY.rawValue)) }
        defer { OPENSSL_sk_free(untrusted) }  // the certificates are freed by their owner, the caller
        for certificate in intermediates where OPENSSL_sk_push(untrusted, UnsafeRawPointer(certificate)) <= 0 {
            return Rejection(reason: "no memory", nssError: PRErrorCode(truncatingIfNeeded: SEC_ERROR_NO_MEMORY.rawValue))
        }
        guard let context = X509_STORE_CTX_new() else { return Rejection(reason: "no memory", nssError: PRErrorCode(truncatingIfNeeded: SEC_ERROR_NO_MEMORY.rawValue)) }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, store, leaf, untrusted) == 1,
              X509_STORE_CTX_set_purpose(context, Self.purposeSSLServer) == 1,
              let parameters = X509_STORE_CTX_get0_param(context) else {
            return Rejection(reason: "the verification could not be set up", nssError: PRErrorCode(truncatingIfNeeded: SEC_ERROR_NO_MEMORY.rawValue))
        }
        let named: Int32
        if nameIsIPAddress {
            named = X509_VERIFY_PARAM_set1_ip_asc(parameters, name)
        } else {
            X509_VERIFY_PARAM_set_hostflags(parameters, Self.noPartialWildcards)
            named = X509_VERIFY_PARAM_set1_host(parameters, name, 0)
        }
        guard named == 1 else { return Rejection(reason: "the server name cannot be checked", nssError: PRErrorCode(truncatingIfNeeded: SSL_ERROR_BAD_CERT_DOMAIN.rawValue)) }
        let verified = withExtendedLifetime(trust) { X509_verify_cert(context) }
        guard verified == 1 else {
            let code = X509_STORE_CTX_get_error(context)
            let reason = String(cString: X509_verify_cert_error_string(Int(code)))
            let mismatch = code == X509_V_ERR_HOSTNAME_MISMATCH || code == X509_V_ERR_IP_ADDRESS_MISMATCH
            return Rejection(reason: "certificate verify failed: \(reason)",
                             nssError: mismatch ? PRErrorCode(truncatingIfNeeded: SSL_ERROR_BAD_CERT_DOMAIN.rawValue)
                                                    : PRErrorCode(truncatingIfNeeded: SEC_ERROR_UNTRUSTED_ISSUER.rawValue))
        }
        return nil
    }
}
