internal import CNSS
import Synchronization
import TransportWire
import TransportBase

/// A TLS client whose ClientHello is shaped like a browser's (``BrowserTLSProfile``), over any
/// connected byte stream, as a TransportConnection: one reader and one writer may run at once.
///
/// NSS (Firefox's own TLS library) does the TLS on a memory I/O layer under a lock; the stream's
/// socket I/O happens outside it, as in the transports' OpenSSL memory-BIO streams. Everything NSS
/// queues for the server is sent by `flush`, which takes and writes inside one ordered section.
/// The server's certificate is verified with OpenSSL (``BrowserTLSConfiguration``).
public final class BrowserTLSStream: TransportConnection, @unchecked Sendable {
    private let connection: any TransportConnection
    private let socket: Mutex<NSSClientSocket>
    private let sendOrder = SerialSection()

    /// Handshake bytes accepted from the server before the handshake fails: a server cannot make
    /// the client hold more than this (real handshakes are a few kB to ~30 kB).
    public static let handshakeByteLimit = 256 * 1024
    /// Largest ciphertext read from the connection at once, and largest plaintext chunk handed to
    /// NSS or returned; below the memory layer's inbound capacity.
    static let chunk = 16_384

    private init(connection: any TransportConnection, socket: consuming sending NSSClientSocket) {
        self.connection = connection
        self.socket = Mutex(socket)
    }

    /// The protocol the server chose by ALPN; nil when it chose none.
    public var applicationProtocol: String? { socket.withLock { $0.negotiatedApplicationProtocol } }
    /// The negotiated TLS version (0x0304 for TLS 1.3) and cipher suite, as IANA numbers.
    public var protocolVersion: UInt16 { socket.withLock { $0.channel.version } }
    public var cipherSuite: UInt16 { socket.withLock { $0.channel.cipherSuite } }
    /// True when the server accepted a ticket from an earlier connection (TLS 1.3 resumption,
    /// ``BrowserTLSConfiguration/resumesSessions``): it sent no certificate this time.
    public var isResumed: Bool { socket.withLock { $0.channel.resumed } }

    /// Runs the handshake over `connection`, which must be connected and is used by this stream
    /// alone from here on. Within `configuration.handshakeTimeout` the stream is returned or an
    /// error thrown: on expiry the connection is closed, which ends any read in progress.
    /// The caller keeps responsibility for closing `connection` when this throws.
    public static func handshake(over connection: any TransportConnection,
                                 configuration: BrowserTLSConfiguration) async throws(TransportError) -> BrowserTLSStream {
        try configuration.validate()
        let verifier = ServerCertificateVerifier(name: configuration.bareServerName, nameIsIPAddress: configuration.serverNameIsIPAddress,
                                                 caFile: configuration.caFile)
        let stream = BrowserTLSStream(connection: connection, socket: try NSSClientSocket(configuration: configuration, verifier: verifier))
        let expiry = Expiry()
        let deadline = ContinuousClock.now + configuration.handshakeTimeout
        do {
            try await withDeadline(configuration.handshakeTimeout, expired: { expiry.fire(); connection.close() }) {
                try await stream.runHandshake(verifier: verifier, deadline: deadline)
            }
            return stream
        } catch {
            if expiry.fired || ContinuousClock.now >= deadline {
                throw TransportError(code: .tlsHandshakeTimedOut, kind: .timeout,
                                     message: "the TLS handshake did not finish within \(configuration.handshakeTimeout)")
            }
            if let error = error as? TransportError { throw error }
            throw TransportError(code: .tlsHandshakeFailed, kind: .internal, message: "the TLS handshake failed: \(error)")
        }
    }

    /// The records a connection with `configuration` would send first (its ClientHello), made by
    /// NSS into memory: no socket, no peer. A randomized profile draws as it would for a real
    /// connection, so each call may differ. For showing what a route presents
    /// (``ClientHelloFingerprint/init(presentedBy:)``).
    public static func clientHello(for configuration: BrowserTLSConfiguration) throws(TransportError) -> [UInt8] {
        try configuration.validate()
        let verifier = ServerCertificateVerifier(name: configuration.bareServerName, nameIsIPAddress: configuration.serverNameIsIPAddress,
                                                 caFile: configuration.caFile)
        let socket = try NSSClientSocket(configuration: configuration, verifier: verifier, resuming: false)
        // With nothing fed, NSS writes its hello and then waits for the server's answer.
        guard SSL_ForceHandshake(socket.descriptor) != SECSuccess else {
            throw TransportError(code: .tlsSetupFailed, kind: .internal, message: "NSS finished a handshake without a server")
        }
        let error = NSSError.current()
        let hello = socket.takeOutbound()
        guard error.isWouldBlock, !hello.isEmpty else {
            throw TransportError(code: .tlsSetupFailed, kind: .internal, message: "NSS wrote no ClientHello (\(error))")
        }
        return hello
    }

    /// Set by the handshake's timer when it closed the connection.
    private final class Expiry: Sendable {
        private let flag = Atomic<Bool>(false)
        func fire() { flag.store(true, ordering: .relaxed) }
        var fired: Bool { flag.load(ordering: .relaxed) }
    }

    private enum HandshakeStep: Sendable {
        case done
        case needsInput
        case failed(String)
    }

    private func runHandshake(verifier: ServerCertificateVerifier, deadline: ContinuousClock.Instant) async throws {
        var received = 0
        while true {
            let step = socket.withLock { socket -> HandshakeStep in
                if SSL_ForceHandshake(socket.descriptor) == SECSuccess { return .done }
                let error = NSSError.current()
                return error.isWouldBlock ? .needsInput : .failed(error.description)
            }
            // The server learns why (an alert NSS queued) before the failure is reported.
            try? await flush()
            switch step {
            case .done:
                return
            case .failed(let reason):
                if let rejected = verifier.rejectionReason {
                    throw TransportError(code: .tlsCertificateRejected, kind: .protocolViolation, message: rejected)
                }
                throw TransportError(code: .tlsHandshakeFailed, kind: .protocolViolation, message: "the TLS handshake failed: \(reason)")
            case .needsInput:
                let bytes = try await connection.read(maximumCount: Self.chunk)
                guard !bytes.isEmpty else {
                    throw TransportError(code: .tlsHandshakeFailed, kind: .network,
                                         message: "the server closed the connection during the TLS handshake")
                }
                received += bytes.count
                guard received <= Self.handshakeByteLimit else {
                    throw TransportError(code: .tlsHandshakeTooLarge, kind: .protocolViolation,
                                         message: "the server sent more than \(Self.handshakeByteLimit) bytes without finishing the TLS handshake")
                }
                try feed(bytes)
                guard ContinuousClock.now < deadline else {
                    throw TransportError(code: .tlsHandshakeTimedOut, kind: .timeout, message: "the TLS handshake did not finish in time")
                }
            }
        }
    }

    private func feed(_ bytes: [UInt8]) throws(TransportError) {
        // NSS asks for input only once it has read everything fed, so this holds one read at most.
        guard socket.withLock({ $0.feed(bytes) }) else {
            throw TransportError(code: .tlsRecordRejected, kind: .internal, message: "the TLS input buffer is full")
        }
    }

    /// Sends whatever NSS has queued, in order.
    private func flush() async throws {
        try await sendOrder.run {
            let pending = socket.withLock { $0.takeOutbound() }
            if !pending.isEmpty { try await connection.write(pending) }
        }
    }

    private enum ReadOutcome: Sendable {
        case data([UInt8])
        case end
        case needsInput
        case failed(String)
    }

    public func read(maximumCount: Int) async throws -> [UInt8] {
        let limit = min(max(1, maximumCount), Self.chunk)
        while true {
            let outcome = socket.withLock { socket -> ReadOutcome in
                var buffer = [UInt8](repeating: 0, count: limit)
                let count = buffer.withUnsafeMutableBytes {
                    PR_Recv(socket.descriptor, $0.baseAddress, Int32($0.count), 0, PRIntervalTime(PR_INTERVAL_NO_WAIT))
                }
                if count > 0 { return .data(Array(buffer.prefix(Int(count)))) }
                if count == 0 { return .end }
                let error = NSSError.current()
                return error.isWouldBlock ? .needsInput : .failed(error.description)
            }
            // Reading can make NSS answer (a TLS 1.3 KeyUpdate).
            try await flush()
            switch outcome {
            case .data(let bytes):
                return bytes
            case .end:
                return []
            case .failed(let reason):
                throw TransportError(code: .tlsRecordRejected, kind: .protocolViolation, message: "a TLS record from the server was refused: \(reason)")
            case .needsInput:
                let bytes = try await connection.read(maximumCount: Self.chunk)
                // End of stream without close_notify: the protocol inside (tor's TLS, HTTP framing)
                // decides whether what came was complete.
                guard !bytes.isEmpty else { return [] }
                try feed(bytes)
            }
        }
    }

    public func write(_ bytes: [UInt8]) async throws {
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + Self.chunk, bytes.count)
            let (sent, reason) = socket.withLock { socket -> (Int32, String) in
                let sent = bytes[offset..<end].withUnsafeBytes {
                    PR_Send(socket.descriptor, $0.baseAddress, Int32($0.count), 0, PRIntervalTime(PR_INTERVAL_NO_WAIT))
                }
                return (sent, sent > 0 ? "" : NSSError.current().description)
            }
            guard sent > 0 else {
                throw TransportError(code: .tlsRecordRejected, kind: .internal, message: "TLS write failed: \(reason)")
            }
            offset += Int(sent)
            try await flush()
        }
    }

    /// Sends close_notify, then half-closes the connection.
    public func closeWrite() async {
        socket.withLock { _ = PR_Shutdown($0.descriptor, PR_SHUTDOWN_SEND) }
        try? await flush()
        await connection.closeWrite()
    }

    public func close() { connection.close() }
}
