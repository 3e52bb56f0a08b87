internal import COpenSSL
import Synchronization
import TransportBase

/// TLS (OpenSSL, 1.2 or newer, no ALPN, no renegotiation) over a TCP socket, as a
/// TransportConnection: one reader and one writer may run at once.
///
/// OpenSSL works on two memory BIOs under a lock; the socket I/O happens outside it. Everything
/// OpenSSL queues for the peer is sent by `flush`, which drains and writes inside one serial
/// section, so records leave in the order OpenSSL made them even when the reader (a TLS 1.3 key
/// update) and the writer both produce some.
final class WebtunnelTLSStream: TransportConnection, @unchecked Sendable {
    private let socket: TCPSocket
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

    /// Largest ciphertext chunk read from the socket at once, and largest plaintext read returned.
    private static let chunk = 16_384

    private init(socket: TCPSocket, handles: consuming sending Handles) {
        self.socket = socket
        self.handles = Mutex(handles)
    }

    /// Runs the handshake; the certificate must chain to the trust store (OpenSSL's default
    /// paths, which honour SSL_CERT_FILE / SSL_CERT_DIR, plus `caFile` when given) and match
    /// `serverName` (host name check and SNI for names, IP check and no SNI for IP literals).
    /// The caller bounds it with a deadline that aborts the socket.
    static func handshake(over socket: TCPSocket, serverName: String, serverNameIsIP: Bool,
                          caFile: String?) async throws -> WebtunnelTLSStream {
        guard let context = caFile.map({ $0.withCString { postern_tls_client_context_without_alpn($0) } })
                ?? postern_tls_client_context_without_alpn(nil) else {
            ERR_clear_error()
            throw failure("the TLS context could not be created (trust store or CA file unreadable)")
        }
        var incoming: OpaquePointer?
        var outgoing: OpaquePointer?
        guard let ssl = serverName.withCString({ postern_tls_client(context, $0, serverNameIsIP ? 1 : 0, 1, &incoming, &outgoing) }),
              let incoming, let outgoing else {
            SSL_CTX_free(context)
            ERR_clear_error()
            throw failure("the TLS connection could not be set up")
        }
        let stream = WebtunnelTLSStream(socket: socket, handles: Handles(context: context, ssl: ssl, incoming: incoming, outgoing: outgoing))
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
            guard wantsRead else { throw failure("the TLS handshake failed: \(reason)") }
            guard try await stream.pull() else { throw failure("the server closed the connection during the TLS handshake") }
        }
    }

    private static func failure(_ message: String) -> TransportError {
        TransportError(code: .webtunnelTLSFailed, kind: .protocolViolation, message: message)
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
            if !pending.isEmpty { try await socket.write(pending) }
        }
    }

    /// Moves one chunk of ciphertext from the socket into OpenSSL; false at end of stream.
    private func pull() async throws -> Bool {
        let bytes = try await socket.read(maximumCount: Self.chunk)
        guard !bytes.isEmpty else { return false }
        handles.withLock { h in
            _ = bytes.withUnsafeBytes { BIO_write(h.incoming, $0.baseAddress, Int32($0.count)) }
        }
        return true
    }

    func read(maximumCount: Int) async throws -> [UInt8] {
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
                // End of stream without close_notify: tor's own TLS inside notices a truncation.
                guard try await pull() else { return [] }
            default:
                throw TransportError(code: .webtunnelTLSFailed, kind: .protocolViolation, message: "a TLS record from the server was refused")
            }
        }
    }

    func write(_ bytes: [UInt8]) async throws {
        guard !bytes.isEmpty else { return }
        let written = handles.withLock { h -> Int32 in
            let n = bytes.withUnsafeBytes { SSL_write(h.ssl, $0.baseAddress, Int32($0.count)) }
            if n <= 0 { ERR_clear_error() }
            return n
        }
        guard written == Int32(bytes.count) else {
            throw TransportError(code: .webtunnelTLSFailed, kind: .internal, message: "TLS write failed")
        }
        try await flush()
    }

    func closeWrite() async {
        handles.withLock { h in
            _ = SSL_shutdown(h.ssl)
            ERR_clear_error()
        }
        try? await flush()
        await socket.closeWrite()
    }

    func close() { socket.close() }
}

/// Runs bodies one after another, in the order they asked (FIFO), across suspension points.
final class SerialSection: Sendable {
    private struct State {
        var busy = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    func run<T>(_ body: () async throws -> T) async throws -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let enterNow = state.withLock { state -> Bool in
                if state.busy { state.waiting.append(continuation); return false }
                state.busy = true
                return true
            }
            if enterNow { continuation.resume() }
        }
        defer {
            let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if state.waiting.isEmpty { state.busy = false; return nil }
                return state.waiting.removeFirst()
            }
            next?.resume()
        }
        return try await body()
    }
}
