internal import CNSS
internal import CNSSShim
import TransportBase

/// The datagram pump shared by ``DTLSServerSocket`` and ``DTLSClientSocket``: datagrams from the
/// peer go in one at a time, NSS runs the handshake or decrypts, and whatever NSS wrote comes out
/// as datagrams. Every call returns at once (NSS never blocks on the memory layer).
///
/// Hostile input: a datagram longer than the layer holds or arriving while its queue is full is
/// dropped, as a UDP socket drops; at most `handshakeDatagramLimit` datagrams are taken before
/// the handshake completes (a flood fails it with dtls-datagram-flood); the handshake ends by
/// `handshakeTimeout` from the first datagram or timer tick (tls-handshake-timed-out). NSS drops
/// records it cannot parse or authenticate, as DTLS requires (RFC 9147 section 4.5.2).
final class DTLSEngine {
    private let socket: NSSDatagramSocket
    private let role: NSSDatagramSocket.Role
    private let handshakeTimeout: Duration
    private let handshakeDatagramLimit: Int
    private var handshakeDeadline: ContinuousClock.Instant?
    private var handshakeDatagrams = 0
    private(set) var handshakeComplete = false
    private var started = false
    /// Datagrams dropped because the layer refused them (too long, queue full).
    private(set) var droppedDatagrams = 0

    /// Plaintext read per record at most (a record carries at most 2^14 bytes).
    private static let readChunk = 16_384

    /// An engine on a new NSS DTLS socket for `role`, with `identity` (a fresh one when nil).
    init(role: NSSDatagramSocket.Role, identity: WebRTCIdentity?, profile: DTLSProfile,
         handshakeTimeout: Duration, handshakeDatagramLimit: Int) throws(TransportError) {
        let identity = if let identity { identity } else { try WebRTCIdentity() }
        socket = try NSSDatagramSocket(role: role, identity: identity, profile: profile)
        self.role = role
        self.handshakeTimeout = handshakeTimeout
        self.handshakeDatagramLimit = handshakeDatagramLimit
    }

    /// The certificate and key this end presents.
    var identity: WebRTCIdentity { socket.identity }

    func start(expectingPeerSHA256 digest: [UInt8]) throws(TransportError) {
        guard !started else {
            throw TransportError(code: .invalidArguments, kind: .invalidInput, message: "the DTLS handshake has already started")
        }
        try socket.start(expectingPeerSHA256: digest, role: role)
        started = true
    }

    private func requireStarted() throws(TransportError) {
        guard started else {
            throw TransportError(code: .dtlsNotEstablished, kind: .invalidInput,
                                 message: "the peer's certificate digest must be given before the DTLS handshake")
        }
    }

    private func armDeadline() {
        if handshakeDeadline == nil { handshakeDeadline = .now + handshakeTimeout }
    }

    private func checkDeadline() throws(TransportError) {
        if !handshakeComplete, let handshakeDeadline, ContinuousClock.now >= handshakeDeadline {
            throw TransportError(code: .tlsHandshakeTimedOut, kind: .timeout,
                                 message: "the DTLS handshake did not finish within \(handshakeTimeout)")
        }
    }

    /// One datagram from the peer: the datagrams to send back and the application data it carried.
    func receive(_ datagram: [UInt8]) throws(TransportError) -> (send: [[UInt8]], data: [[UInt8]]) {
        try requireStarted()
        if !handshakeComplete {
            armDeadline()
            handshakeDatagrams += 1
            guard handshakeDatagrams <= handshakeDatagramLimit else {
                throw TransportError(code: .dtlsDatagramFlood, kind: .protocolViolation,
                                     message: "the peer sent more than \(handshakeDatagramLimit) datagrams without finishing the DTLS handshake")
            }
        }
        if !socket.feed(datagram) { droppedDatagrams += 1 }
        let data = try advance()
        return (socket.takeOutbound(), data)
    }

    /// Runs the handshake as far as it goes, then reads every record that is ready.
    private func advance() throws(TransportError) -> [[UInt8]] {
        if !handshakeComplete {
            try handshake()
            try checkDeadline()
        }
        guard handshakeComplete else { return [] }
        var data: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: Self.readChunk)
        while true {
            let count = buffer.withUnsafeMutableBytes {
                PR_Recv(socket.descriptor, $0.baseAddress, Int32($0.count), 0, PRIntervalTime(PR_INTERVAL_NO_WAIT))
            }
            if count > 0 {
                data.append(Array(buffer.prefix(Int(count))))
                continue
            }
            if count == 0 {
                throw TransportError(code: .dtlsClosed, kind: .network, message: "the peer closed DTLS")
            }
            let error = NSSError.current()
            if error.isWouldBlock { break }
            throw TransportError(code: .tlsRecordRejected, kind: .protocolViolation, message: "a DTLS record was refused: \(error)")
        }
        return data
    }

    private func handshake() throws(TransportError) {
        if SSL_ForceHandshake(socket.descriptor) == SECSuccess {
            // NSS calls the certificate hook before it completes; a handshake without it (no
            // certificate at all) must not count as verified.
            guard socket.peerVerified else {
                throw TransportError(code: .tlsCertificateRejected, kind: .protocolViolation,
                                     message: "the DTLS peer's certificate was never checked")
            }
            handshakeComplete = true
            return
        }
        let error = NSSError.current()
        // A malformed handshake message is dropped and the handshake goes on, as in Firefox's
        // WebRTC: over datagrams, bad bytes are lost packets, not the end.
        if error.isWouldBlock || error.code == SSL_ERROR_RX_MALFORMED_HANDSHAKE.rawValue { return }
        if error.code == SSL_ERROR_BAD_CERTIFICATE.rawValue || error.code == SSL_ERROR_NO_CERTIFICATE.rawValue {
            throw TransportError(code: .tlsCertificateRejected, kind: .protocolViolation,
                                 message: "the DTLS peer's certificate does not match the SDP fingerprint (\(error))")
        }
        throw TransportError(code: .tlsHandshakeFailed, kind: .protocolViolation, message: "the DTLS handshake failed: \(error)")
    }

    /// Lets NSS retransmit a flight whose timer ran out (call every 100 ms or so while the
    /// handshake runs); a client's first call sends its ClientHello.
    func handleTimeout() throws(TransportError) -> [[UInt8]] {
        try requireStarted()
        if !handshakeComplete {
            armDeadline()
            try handshake()
            try checkDeadline()
        }
        return socket.takeOutbound()
    }

    /// One application datagram (an SCTP packet) as DTLS records.
    func send(_ data: [UInt8]) throws(TransportError) -> [[UInt8]] {
        guard handshakeComplete else {
            throw TransportError(code: .dtlsNotEstablished, kind: .invalidInput, message: "DTLS is not established yet")
        }
        let sent = data.withUnsafeBytes {
            PR_Send(socket.descriptor, $0.baseAddress, Int32($0.count), 0, PRIntervalTime(PR_INTERVAL_NO_WAIT))
        }
        guard sent == Int32(data.count) else {
            throw TransportError(code: .tlsRecordRejected, kind: .internal, message: "DTLS write failed: \(NSSError.current())")
        }
        return socket.takeOutbound()
    }

    var peerCertificateSHA256: [UInt8]? { socket.peerSHA256 }

    var negotiation: DTLSNegotiation? {
        guard handshakeComplete else { return nil }
        let channel = socket.channel
        let wire: UInt16 = channel.version >= 0x0304 ? 0xfefc : 0xfefd
        return DTLSNegotiation(version: wire, cipherSuite: channel.cipherSuite, srtpProfile: socket.srtpProfile)
    }
}
