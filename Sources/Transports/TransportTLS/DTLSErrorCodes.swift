import PosternSystem
import TransportBase

/// TransportTLS's DTLS failures beyond the TLS ones (``TransportError/Code/tlsHandshakeFailed``,
/// ``TransportError/Code/tlsHandshakeTimedOut``, ``TransportError/Code/tlsRecordRejected``, which
/// DTLS uses too). Messages never contain certificate contents or digests.
extension TransportError.Code {
    /// The peer sent more datagrams than ``DTLSServerSocket/handshakeDatagramLimit`` before the
    /// handshake completed.
    public static let dtlsDatagramFlood = Self(rawValue: "dtls-datagram-flood")
    /// The peer ended DTLS (close_notify).
    public static let dtlsClosed = Self(rawValue: "dtls-closed")
    /// Application data was given before the handshake completed.
    public static let dtlsNotEstablished = Self(rawValue: "dtls-not-established")
}
