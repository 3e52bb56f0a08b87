import Foundation
import Synchronization
import TransportBase

/// A front that passes TLS through untouched, as a layer-4 CDN edge does: it accepts on `front`
/// (a 127.0.0.0/8 address) and relays each connection's bytes both ways to `origin`. The client's
/// handshake is the origin's to finish, so the origin's certificate must carry the front's name.
///
/// Why the tests need one: the bed's broker speaks HTTPS on 8443, and a bridge line's `fronts=`
/// takes names and addresses without a port (a front is dialled on 443), so a bridge line cannot
/// front the bed's broker directly.
final class PassThroughFront: @unchecked Sendable {
    private let listener: LoopbackListener
    private let task: Task<Void, Never>
    private let accepted: AcceptCount

    private final class AcceptCount: Sendable {
        let value = Mutex(0)
    }

    /// Connections accepted so far.
    var connections: Int { accepted.value.withLock { $0 } }

    init(front: TransportEndpoint, origin: TransportEndpoint) throws {
        let listener = try LoopbackListener(loopbackAddress: front)
        self.listener = listener
        let accepted = AcceptCount()
        self.accepted = accepted
        task = Task {
            await withDiscardingTaskGroup { group in
                while let client = try? await listener.accept() {
                    accepted.value.withLock { $0 += 1 }
                    group.addTask {
                        defer { client.close() }
                        guard let upstream = try? await TCPSocket.connect(to: origin, timeout: .seconds(10)) else { return }
                        defer { upstream.close() }
                        await withDiscardingTaskGroup { pair in
                            pair.addTask { await Self.pump(from: client, to: upstream) }
                            pair.addTask { await Self.pump(from: upstream, to: client) }
                        }
                    }
                }
            }
        }
    }

    /// Copies until `source` ends or fails, then ends `destination`'s sending side.
    private static func pump(from source: TCPSocket, to destination: TCPSocket) async {
        while let chunk = try? await source.read(maximumCount: 65536), !chunk.isEmpty {
            do { try await destination.write(chunk) } catch { break }
        }
        await destination.closeWrite()
    }

    func stop() {
        listener.close()
        task.cancel()
    }
}
