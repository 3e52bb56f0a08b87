/// A bidirectional byte stream: a TCP socket, TLS over one, a WebSocket, a WebRTC data channel, or
/// what a transport makes of one. The one stream protocol of the transports and the wire code
/// (TransportBase knows it as `TransportConnection`).
///
/// One reader and one writer may use it concurrently. `read` returns an empty array at end of
/// stream. `close` may be called from anywhere and makes pending operations fail.
public protocol ByteStream: AnyObject, Sendable {
    /// Up to `maximumCount` bytes (at least one); empty at end of stream.
    func read(maximumCount: Int) async throws -> [UInt8]
    /// Writes all of `bytes` or throws.
    func write(_ bytes: [UInt8]) async throws
    /// Signals end of stream to the peer where the stream can express it.
    func closeWrite() async
    func close()
}
