/// A connection that can pass what it reads from its peer straight to a socket from its own
/// buffers, without handing out an array per read: PTSocksServer's relay uses this for the
/// transport-to-tor direction when the transport offers it (obfs4 writes the payloads it decrypted
/// in its receive buffer to tor's socket with one gathering write).
///
/// The same rule as `read`: one reader at a time, and `forward` is a read.
public protocol ForwardingConnection: TransportConnection {
    /// Reads from the peer until some bytes are available, writes all of them to `socket`, and
    /// returns how many; 0 at end of stream.
    func forward(to socket: TCPSocket) async throws -> Int
}
