import Foundation
import Synchronization
import TransportBase

/// A counting relay on loopback between a child `postern run` and one bridge, for `postern bridges
/// test --deep`: the child's tor (or its in-process transport) connects here, and every connection
/// is carried to the bridge's ip:port on a socket whose ``FlowCounters`` see the bytes the bridge
/// sends and when they stop. Reading them at this one place works the same for a vanilla bridge
/// (tor dials it itself, so the child's own ledger never sees it) and for obfs4.
///
/// Bounded: at most ``maximumConnections`` carried at once (tor opens one or two to a bridge; more
/// are closed at once), 16 KiB buffers, and every socket goes with ``close()``.
public final class BridgeRelay: Sendable {
    /// Connections carried at once; later ones are closed on arrival.
    public static let maximumConnections = 8
    /// The limit for each connect to the bridge.
    public static let connectTimeout: Duration = .seconds(10)

    private struct State {
        var upstreams: [TCPSocket] = []
        var downstreams: [TCPSocket] = []
        var closed = false
    }

    private let listener: LoopbackListener
    private let bridge: TransportEndpoint
    private let ledger = FlowLedger()
    private let state = Mutex(State())
    private let accepting = Mutex<Task<Void, Never>?>(nil)

    /// The loopback port the child dials instead of the bridge.
    public var port: UInt16 { listener.port }

    /// Listens on a free loopback port and carries each connection to `bridge`.
    public init(to bridge: TransportEndpoint) throws(TransportError) {
        listener = try LoopbackListener(port: 0, backlog: 16)
        self.bridge = bridge
        let task = Task { [self] in await acceptLoop() }
        accepting.withLock { $0 = task }
    }

    /// The connections to the bridge so far, finished and open (their counts as they stand).
    public var flows: [FlowReport] { ledger.finishedFlows() + ledger.openFlows() }

    /// Stops listening and closes every connection.
    public func close() {
        let sockets = state.withLock { state -> [TCPSocket] in
            state.closed = true
            defer { state.upstreams = []; state.downstreams = [] }
            return state.upstreams + state.downstreams
        }
        listener.close()
        accepting.withLock { $0?.cancel() }
        for socket in sockets { socket.close() }
    }

    deinit { close() }

    private func acceptLoop() async {
        while !Task.isCancelled {
            guard let client = try? await listener.accept() else { return }
            let admitted = state.withLock { state -> Bool in
                guard !state.closed, state.downstreams.count < Self.maximumConnections else { return false }
                state.downstreams.append(client)
                return true
            }
            guard admitted else {
                client.close()
                continue
            }
            Task { [self] in await carry(client) }
        }
    }

    private func carry(_ client: TCPSocket) async {
        // The parent's dialer: counted in this relay's ledger, and paced by the process's gate
        // like every other connection Postern opens to a bridge.
        let dialer = OutboundDialer.direct.reporting(to: ledger, as: .healthCheck)
        guard let upstream = try? await dialer.connect(to: bridge, timeout: Self.connectTimeout) else {
            forget(client)
            client.close()
            return
        }
        let kept = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.upstreams.append(upstream)
            return true
        }
        guard kept else {
            upstream.close()
            client.close()
            return
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await Self.pump(from: client, to: upstream) }
            group.addTask { await Self.pump(from: upstream, to: client) }
            // Either side ending ends both: a half-open relay would keep a frozen flow looking open.
            _ = await group.next()
            client.close()
            upstream.close()
            _ = await group.next()
        }
        forget(client, upstream)
    }

    private func forget(_ sockets: TCPSocket...) {
        state.withLock { state in
            state.downstreams.removeAll { socket in sockets.contains { $0 === socket } }
            state.upstreams.removeAll { socket in sockets.contains { $0 === socket } }
        }
    }

    private static func pump(from source: TCPSocket, to destination: TCPSocket) async {
        while true {
            guard let bytes = try? await source.read(maximumCount: 16 * 1024), !bytes.isEmpty else { return }
            guard (try? await destination.write(bytes)) != nil else { return }
        }
    }
}
