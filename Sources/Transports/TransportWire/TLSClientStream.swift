// TLS client (RFC 8446 and RFC 5246, through OpenSSL 3: version 1.2 or newer, no renegotiation)
// over any ByteStream, on two memory BIOs: OpenSSL only ever sees bytes, the stream below carries
// them. What a caller chooses (TLSClientOptions):
//   - the name the certificate must match, and whether it goes out as SNI: fronting sends the
//     front's name, utls-nosni none at all; an IP literal is matched as an address and never sent
//     as SNI (RFC 6066 section 3);
//   - the trust: OpenSSL's default paths (which honour SSL_CERT_FILE and SSL_CERT_DIR) plus an extra
//     CA file; the certificate is always verified, there is no mode that skips it;
//   - ALPN: none (webtunnel's reference client offers none) or http/1.1 (the broker client).
// Caps and deadlines: ciphertext is read in chunks of at most 16 KiB, plaintext handed out in at
// most 16 KiB; the handshake ends by `handshakeDeadline` when the caller gives one (checked after
// every read, so a server that drips its certificate holds the dial at most that long plus one read
// of the stream below), else by the caller's own deadline aborting the stream below.
internal import COpenSSL
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// What a TLS client connection checks and offers.
public struct TLSClientOptions: Sendable {
    /// The name (or IP literal) the certificate must match.
    public var serverName: String
    /// Whether `serverName` is an IP literal (an IP check and no SNI); nil decides by `isIPLiteral`.
    public var serverNameIsIP: Bool?
    /// False leaves SNI out of the ClientHello (the name is still checked).
    public var sendsServerName: Bool
    /// An extra CA bundle trusted besides the system store.
    public var caFile: String?
    /// Offers ALPN http/1.1; false offers no ALPN.
    public var offersHTTP11: Bool
    /// The whole handshake ends by this (nil: the caller bounds it by aborting the stream below).
    public var handshakeDeadline: Duration?

    public init(serverName: String, serverNameIsIP: Bool? = nil, sendsServerName: Bool = true, caFile: String? = nil,
                offersHTTP11: Bool = false, handshakeDeadline: Duration? = nil) {
        self.serverName = serverName
        self.serverNameIsIP = serverNameIsIP
        self.sendsServerName = sendsServerName
        self.caFile = caFile
        self.offersHTTP11 = offersHTTP11
        self.handshakeDeadline = handshakeDeadline
    }

    /// Whether `name` is an IPv4 or IPv6 literal (matched as an address, never sent as SNI).
    public static func isIPLiteral(_ name: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, name, &v4) == 1 || inet_pton(AF_INET6, name, &v6) == 1
    }
}

/// TLS over a ByteStream, itself a ByteStream: one reader and one writer may run at once.
///
/// OpenSSL works on two memory BIOs under a lock; the I/O on the stream below happens outside it.
/// Everything OpenSSL queues for the peer is sent by `flush`, which drains and writes inside one
/// serial section, so records leave in the order OpenSSL made them even when the reader (a TLS 1.3
/// key update) and the writer both produce some.
public final class TLSClientStream: ByteStream, @unchecked Sendable {
    private let transport: any ByteStream
    private let handles: Mutex<Handles>
    private let sendOrder = SerialSection()

    /// The OpenSSL objects; one owner, freed in deinit.
    private struct Handles: ~Copyable {
        let context: OpaquePointer
        let ssl: OpaquePointer
        let incoming: OpaquePointer
        let outgoing: OpaquePointer
        deinit {
            SSL_free(ssl)  // and both BIOs
            SSL_CTX_free(context)
        }
    }

    /// Largest ciphertext chunk read from the stream below at once, and largest plaintext read returned.
    static let chunk = 16_384

    private init(transport: any ByteStream, handles: consuming sending Handles) {
        self.transport = transport
        self.handles = Mutex(handles)
    }

    /// Runs the handshake over `transport` and returns the encrypted stream. The certificate must
    /// chain to the trust store and match `options.serverName`. On failure the stream below is left
    /// open (its owner closes it).
    public static func handshake(over transport: any ByteStream, options: TLSClientOptions) async throws -> TLSClientStream {
        let deadline = options.handshakeDeadline.map { ContinuousClock.now + $0 }
        let makeContext = { (file: UnsafePointer<CChar>?) in postern_tls_client_context(file, options.offersHTTP11 ? 1 : 0) }
        guard let context = options.caFile.map({ $0.withCString { makeContext($0) } }) ?? makeContext(nil) else {
            ERR_clear_error()
            throw failure(.tlsSetup, kind: .failure, "the TLS context could not be created (trust store or CA file unreadable)")
        }
        let isIP = options.serverNameIsIP ?? TLSClientOptions.isIPLiteral(options.serverName)
        var incoming: OpaquePointer?
        var outgoing: OpaquePointer?
        guard let ssl = options.serverName.withCString({
                  postern_tls_client(context, $0, isIP ? 1 : 0, options.sendsServerName ? 1 : 0, &incoming, &outgoing)
              }),
              let incoming, let outgoing else {
            SSL_CTX_free(context)
            ERR_clear_error()
            throw failure(.tlsSetup, kind: .failure, "the TLS connection could not be set up")
        }
        let stream = TLSClientStream(transport: transport, handles: Handles(context: context, ssl: ssl, incoming: incoming, outgoing: outgoing))
        while true {
            // OpenSSL's error queue is per thread and this task may resume elsewhere, so the
            // reason is read next to the failing call.
            let (done, wantsRead, reason) = stream.handles.withLock { h -> (Bool, Bool, String) in
                let result = SSL_do_handshake(h.ssl)
                if result == 1 { return (true, false, "") }
                let error = SSL_get_error(h.ssl, result)
                if error == SSL_ERROR_WANT_READ { return (false, true, "") }
                var reason: String
                let verify = SSL_get_verify_result(h.ssl)
                if verify != X509_V_OK {
                    reason = "certificate verify failed: " + String(cString: X509_verify_cert_error_string(verify))
                } else {
                    let code = ERR_peek_last_error()
                    reason = ERR_reason_error_string(code).map { String(cString: $0) } ?? "error \(code)"
                }
                ERR_clear_error()
                return (false, false, reason)
            }
            try await stream.flush()
            if done { return stream }
            guard wantsRead else { throw failure(.tlsFailed, kind: .protocolViolation, "the TLS handshake failed: \(reason)") }
            guard try await stream.pull() else {
                throw failure(.closed, kind: .network, "the server closed the connection during the TLS handshake")
            }
            if let deadline, ContinuousClock.now >= deadline {
                throw failure(.timeout, kind: .timeout, "the TLS server did not finish its handshake in time")
            }
        }
    }

    private static func failure(_ code: WireError.Code, kind: WireError.Kind, _ message: String) -> WireError {
        WireError(code: code, kind: kind, message: message)
    }

    private static func drain(_ bio: OpaquePointer) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: chunk)
        while postern_bio_pending(bio) > 0 {
            let n = buffer.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32($0.count)) }
            guard n > 0 else { break }
            out += buffer.prefix(Int(n))
        }
        return out
    }

    /// Sends whatever OpenSSL has queued, in order.
    private func flush() async throws {
        try await sendOrder.run {
            let pending = handles.withLock { Self.drain($0.outgoing) }
            if !pending.isEmpty { try await transport.write(pending) }
        }
    }

    /// Moves one chunk of ciphertext from the stream below into OpenSSL; false at end of stream.
    private func pull() async throws -> Bool {
        let bytes = try await transport.read(maximumCount: Self.chunk)
        guard !bytes.isEmpty else { return false }
        handles.withLock { h in
            _ = bytes.withUnsafeBytes { BIO_write(h.incoming, $0.baseAddress, Int32($0.count)) }
        }
        return true
    }

    public func read(maximumCount: Int) async throws -> [UInt8] {
        let limit = min(max(1, maximumCount), Self.chunk)
        while true {
            let (data, error, hasOutput) = handles.withLock { h -> ([UInt8], Int32, Bool) in
                var buffer = [UInt8](repeating: 0, count: limit)
                let n = buffer.withUnsafeMutableBytes { SSL_read(h.ssl, $0.baseAddress, Int32($0.count)) }
                let error = n > 0 ? 0 : SSL_get_error(h.ssl, n)
                if n <= 0 && error != SSL_ERROR_WANT_READ { ERR_clear_error() }
                return (n > 0 ? Array(buffer.prefix(Int(n))) : [], error, postern_bio_pending(h.outgoing) > 0)
            }
            if hasOutput { try await flush() }
            if !data.isEmpty { return data }
            switch error {
            case SSL_ERROR_ZERO_RETURN:
                return []
            case SSL_ERROR_WANT_READ:
                // End of stream without close_notify: what runs inside (tor's own TLS, HTTP's
                // framing) decides whether that was a truncation.
                guard try await pull() else { return [] }
            default:
                throw Self.failure(.tlsFailed, kind: .protocolViolation, "a TLS record from the server was refused")
            }
        }
    }

    public func write(_ bytes: [UInt8]) async throws {
        guard !bytes.isEmpty else { return }
        let written = handles.withLock { h -> Int32 in
            let n = bytes.withUnsafeBytes { SSL_write(h.ssl, $0.baseAddress, Int32($0.count)) }
            if n <= 0 { ERR_clear_error() }
            return n
        }
        guard written == Int32(bytes.count) else {
            throw Self.failure(.tlsFailed, kind: .failure, "TLS write failed")
        }
        try await flush()
    }

    public func closeWrite() async {
        handles.withLock { h in
            _ = SSL_shutdown(h.ssl)
            ERR_clear_error()
        }
        try? await flush()
        await transport.closeWrite()
    }

    public func close() { transport.close() }
}
