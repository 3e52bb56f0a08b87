internal import COpenSSL

/// The DTLS 1.2 server end of a WebRTC data channel (the proxy answers a=setup:active, so it is
/// the client), on OpenSSL with memory BIOs: datagrams from ICE go in with `receive`, datagrams for
/// ICE come out of every call. A fresh self-signed P-256 certificate per instance; its SHA-256
/// goes into the offer, and the peer's certificate must match the answer's fingerprint.
///
/// Not thread-safe: one owner drives it. The OpenSSL handles are freed in deinit.
public final class DTLSServer {
    /// SHA-256 of our certificate, for a=fingerprint.
    public let certificateDigest: [UInt8]

    private let key: OpaquePointer
    private let certificate: OpaquePointer
    private let context: OpaquePointer
    private let ssl: OpaquePointer
    private let incoming: OpaquePointer
    private let outgoing: OpaquePointer
    public private(set) var handshakeComplete = false

    /// Largest datagram we hand to ICE (DTLS link MTU).
    public static let mtu = 1200

    public init() throws(SnowflakeError) {
        var key: OpaquePointer?
        var certificate: OpaquePointer?
        guard postern_dtls_make_identity(&key, &certificate) == 1, let key, let certificate else {
            throw Self.failure("the DTLS certificate could not be created")
        }
        var digest = [UInt8](repeating: 0, count: 32)
        guard postern_certificate_sha256(certificate, &digest) == 1,
              let context = postern_dtls_server_context(key, certificate) else {
            EVP_PKEY_free(key)
            X509_free(certificate)
            throw Self.failure("the DTLS context could not be created")
        }
        var incoming: OpaquePointer?
        var outgoing: OpaquePointer?
        guard let ssl = postern_dtls_connection(context, &incoming, &outgoing, Self.mtu), let incoming, let outgoing else {
            SSL_CTX_free(context)
            EVP_PKEY_free(key)
            X509_free(certificate)
            throw Self.failure("the DTLS connection could not be created")
        }
        self.key = key
        self.certificate = certificate
        self.context = context
        self.ssl = ssl
        self.incoming = incoming
        self.outgoing = outgoing
        certificateDigest = digest
    }

    deinit {
        SSL_free(ssl)  // frees both BIOs
        SSL_CTX_free(context)
        EVP_PKEY_free(key)
        X509_free(certificate)
    }

    private static func failure(_ message: String) -> SnowflakeError {
        ERR_clear_error()
        return SnowflakeError(code: .connection, kind: .network, message: message)
    }

    /// One datagram from the peer. Returns datagrams to send back and any application data
    /// (SCTP packets) it carried.
    public func receive(_ datagram: [UInt8]) throws(SnowflakeError) -> (send: [[UInt8]], data: [[UInt8]]) {
        _ = datagram.withUnsafeBytes { BIO_write(incoming, $0.baseAddress, Int32($0.count)) }
        var data: [[UInt8]] = []
        if !handshakeComplete {
            let result = SSL_do_handshake(ssl)
            if result == 1 {
                handshakeComplete = true
            } else {
                let error = SSL_get_error(ssl, result)
                guard error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE else {
                    throw Self.failure("the DTLS handshake failed (OpenSSL error \(ERR_peek_last_error()))")
                }
            }
        }
        if handshakeComplete {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
                if n > 0 {
                    data.append(Array(buffer.prefix(Int(n))))
                    continue
                }
                let error = SSL_get_error(ssl, n)
                if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE { break }
                if error == SSL_ERROR_ZERO_RETURN {
                    throw SnowflakeError(code: .closed, kind: .network, message: "the peer closed DTLS")
                }
                throw Self.failure("DTLS read failed")
            }
        }
        return (drain(), data)
    }

    /// Encrypts one application datagram (an SCTP packet).
    public func send(_ data: [UInt8]) throws(SnowflakeError) -> [[UInt8]] {
        guard handshakeComplete else {
            throw SnowflakeError(code: .closed, kind: .network, message: "DTLS is not established yet")
        }
        let n = data.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
        guard n == Int32(data.count) else { throw Self.failure("DTLS write failed") }
        return drain()
    }

    /// Retransmits a lost flight when OpenSSL's timer has expired; call every ~100 ms during the
    /// handshake.
    public func handleTimeout() -> [[UInt8]] {
        _ = postern_dtls_handle_timeout(ssl)
        return drain()
    }

    /// SHA-256 of the peer's certificate, once the handshake is complete.
    public var peerCertificateDigest: [UInt8]? {
        var digest = [UInt8](repeating: 0, count: 32)
        return postern_dtls_peer_sha256(ssl, &digest) == 1 ? digest : nil
    }

    /// Whatever OpenSSL wrote, as datagrams. A memory BIO does not keep datagram boundaries, so
    /// the bytes are cut at DTLS record boundaries (13-byte header, length in bytes 11-12) and
    /// whole records are packed into datagrams of at most `mtu` bytes.
    private func drain() -> [[UInt8]] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while postern_bio_pending(outgoing) > 0 {
            let n = buffer.withUnsafeMutableBytes { BIO_read(outgoing, $0.baseAddress, Int32($0.count)) }
            guard n > 0 else { break }
            bytes += buffer.prefix(Int(n))
        }
        var datagrams: [[UInt8]] = []
        var current: [UInt8] = []
        var index = 0
        while index + 13 <= bytes.count {
            let length = Int(bytes[index + 11]) << 8 | Int(bytes[index + 12])
            let end = min(bytes.count, index + 13 + length)
            if !current.isEmpty && current.count + (end - index) > Self.mtu {
                datagrams.append(current)
                current = []
            }
            current += bytes[index..<end]
            index = end
        }
        if !current.isEmpty { datagrams.append(current) }
        return datagrams
    }
}
