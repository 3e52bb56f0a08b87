import TransportBase

/// The DTLS server end of a WebRTC peer connection on NSS, shaped like Firefox's WebRTC
/// (``DTLSProfile/firefoxWebRTC``): the side a snowflake client takes, since the proxy answers
/// a=setup:active. Datagrams from ICE go in with `receive`; datagrams for ICE come out of every
/// call, one DTLS datagram each (NSS packs records up to its path MTU guess, 1472 bytes, the same
/// cut Firefox's flights have).
///
/// The identity is made fresh per instance unless given; its SHA-256 goes into the SDP offer.
/// The peer's certificate must hash to the digest its SDP answer gave
/// (`expectPeerCertificate(sha256:)`, before the first datagram), checked inside the handshake.
///
/// Not thread-safe: one owner drives it (the snowflake data channel keeps it under a lock).
public final class DTLSServerSocket {
    public let identity: WebRTCIdentity
    public let profile: DTLSProfile
    private let engine: DTLSEngine

    /// Datagrams taken before the handshake completes at most: a DTLS 1.2 or 1.3 handshake with
    /// retransmissions needs a few dozen; beyond this the peer is flooding.
    public static let handshakeDatagramLimit = 512

    /// - Parameter handshakeTimeout: from the first datagram (or timer tick) to a completed
    ///   handshake; later calls throw tls-handshake-timed-out.
    public init(identity: WebRTCIdentity? = nil, profile: DTLSProfile = .firefoxWebRTC,
                handshakeTimeout: Duration = .seconds(20)) throws(TransportError) {
        self.profile = profile
        engine = try DTLSEngine(role: .server, identity: identity, profile: profile, handshakeTimeout: handshakeTimeout,
                                handshakeDatagramLimit: Self.handshakeDatagramLimit)
        self.identity = engine.identity
    }

    /// The peer's certificate must have this SHA-256 digest (its SDP's a=fingerprint:sha-256).
    /// Starts the handshake; call it once, before `receive`.
    public func expectPeerCertificate(sha256 digest: [UInt8]) throws(TransportError) {
        try engine.start(expectingPeerSHA256: digest)
    }

    public var handshakeComplete: Bool { engine.handshakeComplete }

    /// One datagram from the peer: datagrams to send back, and the application data (SCTP
    /// packets) it carried, one element per record.
    public func receive(_ datagram: [UInt8]) throws(TransportError) -> (send: [[UInt8]], data: [[UInt8]]) {
        try engine.receive(datagram)
    }

    /// One application datagram (an SCTP packet), encrypted.
    public func send(_ data: [UInt8]) throws(TransportError) -> [[UInt8]] {
        try engine.send(data)
    }

    /// A lost flight retransmitted once NSS's timer ran out; call every ~100 ms during the handshake.
    public func handleTimeout() throws(TransportError) -> [[UInt8]] {
        try engine.handleTimeout()
    }

    /// SHA-256 of the peer's certificate, once it has been received.
    public var peerCertificateSHA256: [UInt8]? { engine.peerCertificateSHA256 }

    /// Version, suite and SRTP profile, once the handshake is complete.
    public var negotiation: DTLSNegotiation? { engine.negotiation }

    /// Datagrams dropped because they were too long or came faster than NSS read them.
    public var droppedDatagrams: Int { engine.droppedDatagrams }
}
