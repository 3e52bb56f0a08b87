import Obfs4Transport
import SnowflakeTransport
import TransportBase

/// The transports this executable offers, assembled explicitly (no transport knows another).
enum Transports {
    static func registry() throws -> TransportRegistry {
        try TransportRegistry([Obfs4Transport(), SnowflakeTransport()])
    }
}
