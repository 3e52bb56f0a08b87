import Obfs4Transport
import SnowflakeTransport
import TransportBase
import WebtunnelTransport

/// The transports this executable offers, assembled explicitly (no transport knows another).
enum Transports {
    static func registry() throws -> TransportRegistry {
        try TransportRegistry([Obfs4Transport(), SnowflakeTransport(), WebtunnelTransport()])
    }

    /// The same transports with their waits shortened to `handshakeTimeout`, for health checks
    /// that must flag a silent bridge quickly (`postern bridges test`).
    static func registry(handshakeTimeout: Duration) throws -> TransportRegistry {
        try TransportRegistry([Obfs4Transport(connectTimeout: handshakeTimeout, handshakeTimeout: handshakeTimeout, retryForOldBridges: true),
                               SnowflakeTransport(proxyPatience: handshakeTimeout * 2, waitsForDataChannel: true),
                               WebtunnelTransport(connectTimeout: handshakeTimeout, resolveTimeout: handshakeTimeout,
                                                  handshakeTimeout: handshakeTimeout)])
    }
}
