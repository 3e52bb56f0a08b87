import TransportBase

/// A DTLS client on NSS with the same settings, for the package's tests: a real peer for
/// ``DTLSServerSocket`` that offers DTLS 1.3 (pion, the snowflake proxy, offers only DTLS 1.2).
/// Not a product API: Postern's transports are never the WebRTC DTLS client.
package final class DTLSClientSocket {
    package let identity: WebRTCIdentity
    private let engine: DTLSEngine

    package init(identity: WebRTCIdentity? = nil, profile: DTLSProfile = .firefoxWebRTC,
                 handshakeTimeout: Duration = .seconds(20)) throws(TransportError) {
        engine = try DTLSEngine(role: .client, identity: identity, profile: profile, handshakeTimeout: handshakeTimeout,
                                handshakeDatagramLimit: DTLSServerSocket.handshakeDatagramLimit)
        self.identity = engine.identity
    }

    /// The server's certificate must have this SHA-256 digest; the first `handleTimeout` then
    /// sends the ClientHello.
    package func expectPeerCertificate(sha256 digest: [UInt8]) throws(TransportError) {
        try engine.start(expectingPeerSHA256: digest)
    }

    package var handshakeComplete: Bool { engine.handshakeComplete }

    package func receive(_ datagram: [UInt8]) throws(TransportError) -> (send: [[UInt8]], data: [[UInt8]]) {
        try engine.receive(datagram)
    }

    package func send(_ data: [UInt8]) throws(TransportError) -> [[UInt8]] {
        try engine.send(data)
    }

    package func handleTimeout() throws(TransportError) -> [[UInt8]] {
        try engine.handleTimeout()
    }

    package var negotiation: DTLSNegotiation? { engine.negotiation }
}
