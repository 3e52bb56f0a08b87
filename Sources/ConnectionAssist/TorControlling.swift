import PosternTor

/// The handful of calls connection assist makes on tor: its status and failure signals in, route
/// options out. `TorManager` conforms; a test drives assist through a stand-in without a tor.
public protocol TorControlling: Sendable {
    /// tor's status now.
    var currentStatus: TorStatus { get async }
    /// The status from now on (the current one first); `everyChange` also yields changes that
    /// leave bootstrap progress alone.
    func statusUpdates(everyChange: Bool) async -> AsyncStream<TorStatus>
    /// Failed OR connections and bootstrap warnings about the route, from now on.
    func connectionSignals() async -> AsyncStream<ConnectionSignal>
    /// Sets `options` on the running tor (SETCONF), resetting `resetting` first.
    func reconfigure(_ options: [TorOption], resetting: [String]) async throws
}

extension TorManager: TorControlling {}
