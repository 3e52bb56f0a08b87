internal import COpenSSL
import Foundation
import Synchronization

/// TLS (OpenSSL, 1.2 or newer) over any SnowflakeByteStream, for HTTPS to the broker. The
/// certificate is checked against system roots (plus an extra CA file when given) and against the
/// name dialled: with domain fronting that is the front, as in the reference client.
///
/// One request at a time: reads and writes must not overlap (the broker client never does).
public final class TLSClientStream: SnowflakeByteStream {
    private let transport: any SnowflakeByteStream
    private let handles: Mutex<Handles>

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

    private init(transport: any SnowflakeByteStream, handles: consuming sending Handles) {
        self.transport = transport
        self.handles = Mutex(handles)
    }

    /// Runs the handshake over `transport` and returns the encrypted stream.
    /// `sendsServerName` false leaves SNI out (the certificate is still checked against the name).
    /// The whole handshake ends by this (checked after every read): a server that drips its
    /// certificate cannot hold the dial longer than this plus one read timeout.
    public static let handshakeDeadline: Duration = .seconds(20)

    public static func handshake(over transport: any SnowflakeByteStream, serverName: String,
                                 caFile: String?, sendsServerName: Bool = true) async throws(SnowflakeError) -> TLSClientStream {
        let deadline = ContinuousClock.now + handshakeDeadline
        guard let context = caFile.map({ $0.withCString { postern_tls_client_context($0) } }) ?? postern_tls_client_context(nil) else {
            throw failure("the TLS context could not be created (CA file unreadable?)")
        }
        let isIP = serverName.contains(":") || serverName.split(separator: ".").allSatisfy { UInt8($0) != nil }
        var incoming: OpaquePointer?
        var outgoing: OpaquePointer?
        guard let ssl = serverName.withCString({ postern_tls_client(context, $0, isIP ? 1 : 0, sendsServerName ? 1 : 0, &incoming, &outgoing) }),
              let incoming, let outgoing else {
            SSL_CTX_free(context)
            throw failure("the TLS connection could not be set up")
        }
        let stream = TLSClientStream(transport: transport,
                                     handles: Handles(context: context, ssl: ssl, incoming: incoming, outgoing: outgoing))
        while true {
            // OpenSSL's error queue is per thread and this task may resume on another one after the
            // write below, so the reason is read here, next to the failing call.
            let (result, error, pending, reason) = stream.handles.withLock { h -> (Int32, Int32, [UInt8], String) in
                let result = SSL_do_handshake(h.ssl)
                let error = result == 1 ? 0 : SSL_get_error(h.ssl, result)
                var reason = ""
                if result != 1 && error != SSL_ERROR_WANT_READ {
                    let verify = SSL_get_verify_result(h.ssl)
                    if verify != X509_V_OK {
                        reason = "certificate verify failed: " + String(cString: X509_verify_cert_error_string(verify))
                    } else {
                        let code = ERR_peek_last_error()
                        reason = ERR_reason_error_string(code).map { String(cString: $0) } ?? "error \(code)"
                    }
                    ERR_clear_error()
                }
                return (result, error, drain(h.outgoing), reason)
            }
            if !pending.isEmpty { try await transport.write(pending) }
            if result == 1 { return stream }
            guard error == SSL_ERROR_WANT_READ else {
                throw SnowflakeError(code: .connection, kind: .network, message: "the TLS handshake failed: \(reason)")
            }
            try await stream.pull()
            guard ContinuousClock.now < deadline else {
                throw SnowflakeError(code: .timeout, kind: .network, message: "the TLS server did not finish its handshake in time")
            }
        }
    }

    private static func failure(_ message: String) -> SnowflakeError {
        ERR_clear_error()
        return SnowflakeError(code: .connection, kind: .network, message: message)
    }

    private static func drain(_ bio: OpaquePointer) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while postern_bio_pending(bio) > 0 {
            let n = buffer.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32($0.count)) }
            guard n > 0 else { break }
            out += buffer.prefix(Int(n))
        }
        return out
    }

    /// Moves ciphertext from the transport into OpenSSL.
    private func pull() async throws(SnowflakeError) {
        let bytes = try await transport.read(maxLength: 16384)
        guard !bytes.isEmpty else {
            throw SnowflakeError(code: .closed, kind: .network, message: "the TLS peer closed the connection")
        }
        handles.withLock { h in
            _ = bytes.withUnsafeBytes { BIO_write(h.incoming, $0.baseAddress, Int32($0.count)) }
        }
    }

    public func write(_ bytes: [UInt8]) async throws(SnowflakeError) {
        let (written, pending) = handles.withLock { h -> (Int32, [UInt8]) in
            let n = bytes.withUnsafeBytes { SSL_write(h.ssl, $0.baseAddress, Int32($0.count)) }
            return (n, Self.drain(h.outgoing))
        }
        guard written == Int32(bytes.count) || bytes.isEmpty else { throw Self.failure("TLS write failed") }
        try await transport.write(pending)
    }

    public func read(maxLength: Int) async throws(SnowflakeError) -> [UInt8] {
        while true {
            let (data, error, pending) = handles.withLock { h -> ([UInt8], Int32, [UInt8]) in
                var buffer = [UInt8](repeating: 0, count: max(1, maxLength))
                let n = buffer.withUnsafeMutableBytes { SSL_read(h.ssl, $0.baseAddress, Int32($0.count)) }
                let error = n > 0 ? 0 : SSL_get_error(h.ssl, n)
                return (n > 0 ? Array(buffer.prefix(Int(n))) : [], error, Self.drain(h.outgoing))
            }
            if !pending.isEmpty { try await transport.write(pending) }
            if !data.isEmpty { return data }
            switch error {
            case SSL_ERROR_ZERO_RETURN:
                return []
            case SSL_ERROR_WANT_READ:
                do {
                    try await pull()
                } catch where error.code == .closed {
                    return []  // no close_notify: HTTP framing decides whether that was complete
                }
            default:
                throw Self.failure("TLS read failed")
            }
        }
    }

    public func close() {
        transport.close()
    }
}

/// TCP, then TLS when the URL is https: what the broker rendezvous needs outside the test bed's
/// plain-HTTP broker.
public struct OpenSSLTLSConnector: SnowflakeStreamConnector {
    public var caFile: String?
    public var timeoutSeconds: Int
    /// False leaves SNI out of the ClientHello (the bridge line's utls-nosni).
    public var sendsServerName: Bool

    public init(caFile: String? = nil, timeoutSeconds: Int = 15, sendsServerName: Bool = true) {
        self.caFile = caFile
        self.timeoutSeconds = timeoutSeconds
        self.sendsServerName = sendsServerName
    }

    public func connect(host: String, port: UInt16, tlsServerName: String?) async throws(SnowflakeError) -> any SnowflakeByteStream {
        let tcp = try await TCPByteStream.connect(host: host, port: port, timeoutSeconds: timeoutSeconds)
        guard let tlsServerName else { return tcp }
        do {
            return try await TLSClientStream.handshake(over: tcp, serverName: tlsServerName, caFile: caFile,
                                                     sendsServerName: sendsServerName)
        } catch {
            tcp.close()
            throw error
        }
    }
}
