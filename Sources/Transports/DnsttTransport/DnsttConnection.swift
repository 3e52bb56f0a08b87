import Synchronization
import TransportBase

/// The tor byte stream of one DnsttSession.
///
/// `incoming`'s iterator and the bytes left over from a chunk larger than the caller asked for are
/// used by the one reader the TransportConnection contract allows, never concurrently; the
/// session itself is an actor.
final class DnsttConnection: TransportConnection, @unchecked Sendable {
    private let session: DnsttSession
    private var iterator: AsyncThrowingStream<[UInt8], any Error>.Iterator
    private var pending: ArraySlice<UInt8> = []
    private let closed = Atomic<Bool>(false)

    init(session: DnsttSession) {
        self.session = session
        iterator = session.incoming.makeAsyncIterator()
    }

    func read(maximumCount: Int) async throws -> [UInt8] {
        if pending.isEmpty {
            do {
                guard let chunk = try await iterator.next() else { return [] }
                pending = chunk[...]
            } catch {
                throw TransportError(dnstt: error)
            }
        }
        let count = min(max(1, maximumCount), pending.count)
        let out = Array(pending.prefix(count))
        pending = pending.dropFirst(count)
        // Only now has the reader taken these bytes: smux's window opens.
        await session.acknowledgeRead(count)
        return out
    }

    func write(_ bytes: [UInt8]) async throws {
        do {
            try await session.write(bytes)
        } catch {
            throw TransportError(dnstt: error)
        }
    }

    func closeWrite() async {
        await session.finish()
    }

    func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        let session = session
        Task { await session.close() }
    }

    deinit {
        let session = session
        Task { await session.close() }
    }
}
