import Synchronization
import TransportBase

/// A real connection that keeps a copy of everything written through it: the bytes the TLS
/// client sent, ClientHello first.
final class RecordingConnection: TransportConnection, Sendable {
    private let inner: any TransportConnection
    private let writes = Mutex<[[UInt8]]>([])

    init(_ inner: any TransportConnection) { self.inner = inner }

    var written: [[UInt8]] { writes.withLock { $0 } }

    func read(maximumCount: Int) async throws -> [UInt8] { try await inner.read(maximumCount: maximumCount) }
    func write(_ bytes: [UInt8]) async throws {
        writes.withLock { $0.append(bytes) }
        try await inner.write(bytes)
    }
    func closeWrite() async { await inner.closeWrite() }
    func close() { inner.close() }
}
