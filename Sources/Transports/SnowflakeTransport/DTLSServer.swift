import TransportBase
import TransportTLS

/// The DTLS server end of a WebRTC data channel (the proxy answers a=setup:active, so it is the
/// client): TransportTLS's DTLSServerSocket, NSS shaped like Firefox's WebRTC
/// (DTLSProfile.firefoxWebRTC; the measured flight is in docs/FINGERPRINTS.md), with snowflake's
/// errors. Datagrams from ICE go in with `receive`, datagrams for ICE come out of every call. A
/// fresh identity per instance (ECDSA P-256, Firefox's certificate shape); its SHA-256 goes into
/// the offer, and the peer's certificate must match the answer's fingerprint, checked inside the
/// handshake.
///
/// Not thread-safe: one owner drives it.
public final class DTLSServer {
    private let socket: DTLSServerSocket

    /// SHA-256 of our certificate, for a=fingerprint.
    public var certificateDigest: [UInt8] { socket.identity.sha256Fingerprint }

    /// Largest datagram it hands to ICE: NSS's first path MTU guess (1500 less the IPv4 and UDP
    /// headers), up to which it packs a flight's records, as Firefox's flights are cut.
    public static let mtu = 1472

    public init(profile: DTLSProfile = .firefoxWebRTC, handshakeTimeout: Duration = .seconds(20)) throws(SnowflakeError) {
        do {
            socket = try DTLSServerSocket(profile: profile, handshakeTimeout: handshakeTimeout)
        } catch {
            throw Self.converted(error)
        }
    }

    /// The peer's certificate must hash to the answer's a=fingerprint:sha-256; before `receive`.
    public func expectPeerCertificate(sha256 digest: [UInt8]) throws(SnowflakeError) {
        do { try socket.expectPeerCertificate(sha256: digest) } catch { throw Self.converted(error) }
    }

    public var handshakeComplete: Bool { socket.handshakeComplete }

    /// One datagram from the peer. Returns datagrams to send back and any application data
    /// (SCTP packets) it carried.
    public func receive(_ datagram: [UInt8]) throws(SnowflakeError) -> (send: [[UInt8]], data: [[UInt8]]) {
        do { return try socket.receive(datagram) } catch { throw Self.converted(error) }
    }

    /// Encrypts one application datagram (an SCTP packet).
    public func send(_ data: [UInt8]) throws(SnowflakeError) -> [[UInt8]] {
        do { return try socket.send(data) } catch { throw Self.converted(error) }
    }

    /// Retransmits a lost flight when NSS's timer has expired; call every ~100 ms during the
    /// handshake. Throws once the handshake is past its deadline.
    public func handleTimeout() throws(SnowflakeError) -> [[UInt8]] {
        do { return try socket.handleTimeout() } catch { throw Self.converted(error) }
    }

    /// SHA-256 of the peer's certificate, once received.
    public var peerCertificateDigest: [UInt8]? { socket.peerCertificateSHA256 }

    /// Version, suite and SRTP profile of the completed handshake.
    public var negotiation: DTLSNegotiation? { socket.negotiation }

    /// TransportTLS's failure as snowflake's: the peer closing is `closed`, an expired handshake
    /// `timeout`, the rest a connection failure with the same message.
    static func converted(_ error: TransportError) -> SnowflakeError {
        switch error.code {
        case .dtlsClosed: SnowflakeError(code: .closed, kind: .network, message: error.message)
        case .tlsHandshakeTimedOut: SnowflakeError(code: .timeout, kind: .network, message: error.message)
        case .dtlsNotEstablished: SnowflakeError(code: .closed, kind: .network, message: error.message)
        default: SnowflakeError(code: .connection, kind: error.kind == .protocolViolation ? .protocolViolation : .network,
                                message: error.message)
        }
    }
}
