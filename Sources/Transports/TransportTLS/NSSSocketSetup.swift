internal import CNSS
internal import CNSSShim
import TransportBase

/// The NSS setup calls ``NSSClientSocket`` (TLS) and ``NSSDatagramSocket`` (DTLS) make the same
/// way: starting NSS, the protocol versions, exactly the profile's cipher suites in its order, its
/// groups and signature schemes, and ALPN's encoding. A call that fails throws tls-setup-failed
/// naming the step and NSPR's error, read on the same thread right after the call.
struct NSSSocketSetup {
    let descriptor: UnsafeMutablePointer<PRFileDesc>

    /// Starts NSS (once per process, in CNSSShim); a failure carries NSS's own reason.
    static func initializeNSS() throws(TransportError) {
        if let failure = postern_nss_initialize() {
            throw TransportError(code: .tlsSetupFailed, kind: .internal, message: String(cString: failure))
        }
    }

    static func failure(_ step: String) -> TransportError {
        TransportError(code: .tlsSetupFailed, kind: .internal, message: "\(step) (\(NSSError.current()))")
    }

    func check(_ status: SECStatus, _ step: String) throws(TransportError) {
        guard status == SECSuccess else { throw Self.failure(step) }
    }

    func option(_ option: Int32, _ value: Int32, _ step: String) throws(TransportError) {
        try check(SSL_OptionSet(descriptor, option, value), step)
    }

    /// TLS 1.2 (DTLS 1.2: NSS names both by the TLS number) up to `highest`.
    func versions(upTo highest: Int32, _ step: String) throws(TransportError) {
        var range = SSLVersionRange(min: UInt16(SSL_LIBRARY_VERSION_TLS_1_2), max: UInt16(highest))
        try check(SSL_VersionRangeSet(descriptor, &range), step)
    }

    /// Only `cipherSuites` enabled, offered in their order; `groups` and `signatureSchemes` in theirs.
    /// All IANA numbers.
    func prefer(cipherSuites: [UInt16], groups: [UInt16], signatureSchemes: [UInt16]) throws(TransportError) {
        let implemented = SSL_GetImplementedCiphers()
        for index in 0..<Int(SSL_GetNumImplementedCiphers()) {
            guard let suite = implemented?[index] else { break }
            try check(SSL_CipherPrefSet(descriptor, Int32(suite), PR_FALSE), "cipher suites")
        }
        for suite in cipherSuites {
            try check(SSL_CipherPrefSet(descriptor, Int32(suite), PR_TRUE), "cipher suite \(suite)")
        }
        try check(cipherSuites.withUnsafeBufferPointer {
            postern_nss_set_cipher_order(descriptor, $0.baseAddress, UInt32($0.count))
        }, "cipher suite order")
        let groups = groups.map { SSLNamedGroup(rawValue: UInt32($0)) }
        try check(groups.withUnsafeBufferPointer { SSL_NamedGroupConfig(descriptor, $0.baseAddress, UInt32($0.count)) }, "groups")
        let schemes = signatureSchemes.map { SSLSignatureScheme(rawValue: UInt32($0)) }
        try check(schemes.withUnsafeBufferPointer { SSL_SignatureSchemePrefSet(descriptor, $0.baseAddress, UInt32($0.count)) },
                  "signature schemes")
    }

    /// Hands NSS an ALPN list made by ``lengthPrefixed(_:)``.
    func offerApplicationProtocols(_ encoded: [UInt8]) throws(TransportError) {
        try check(encoded.withUnsafeBufferPointer { SSL_SetNextProtoNego(descriptor, $0.baseAddress, UInt32($0.count)) }, "ALPN")
    }

    /// Protocol names as SSL_SetNextProtoNego takes them, in the order given: each name's length
    /// byte, then the name. Names of 1 to 255 bytes, at most 255 bytes in all (NSS's limit).
    static func lengthPrefixed(_ applicationProtocols: [String]) throws(TransportError) -> [UInt8] {
        var encoded: [UInt8] = []
        for name in applicationProtocols {
            let bytes = Array(name.utf8)
            guard (1...255).contains(bytes.count) else {
                throw TransportError(code: .invalidArguments, kind: .invalidInput, message: "an ALPN protocol name must be 1 to 255 bytes")
            }
            encoded += [UInt8(bytes.count)] + bytes
        }
        guard encoded.count <= 255 else {
            throw TransportError(code: .invalidArguments, kind: .invalidInput, message: "the ALPN list is longer than NSS accepts (255 bytes)")
        }
        return encoded
    }
}
