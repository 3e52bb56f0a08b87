/// Whatever can say whether Tor is ready and wait for it. ``TorManager`` is the real one.
public protocol TorReadinessSource: Sendable {
    func torIsReady() async -> Bool
    func waitUntilTorReady(timeout: Duration) async -> Bool
}

extension TorManager: TorReadinessSource {
    public func torIsReady() async -> Bool { currentStatus.isReady }
    public func waitUntilTorReady(timeout: Duration) async -> Bool { await awaitReady(timeout: timeout) }
}
