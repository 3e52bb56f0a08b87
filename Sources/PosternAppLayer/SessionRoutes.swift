import BridgeConfig
import Foundation
import PosternTor
import PosternRuntime

/// The app layer on a session: app traffic goes through the session's SOCKS port and waits for
/// its readiness, so it rides whatever route the session took (bridges, obfs4, snowflake,
/// connection assist). The Tor preference is the session's settings' (a settings directory's
/// store, or in memory, default on).
extension NetworkActivationService {
    /// Through `session`: its SOCKS port, its readiness, and the Tor preference of its settings.
    public init(session: PosternSession, readinessWait: Duration = NetworkActivationService.defaultReadinessWait) {
        let store: BridgeStore? = if case .directory(let store) = session.settings.store { store } else { nil }
        self.init(store: store, readiness: session, socks: session.socks, readinessWait: readinessWait)
    }

    /// Through a session another process runs (a `postern run`), found by its status file.
    public init(running: RunningSession, store: BridgeStore?,
                readinessWait: Duration = NetworkActivationService.defaultReadinessWait) {
        self.init(store: store, readiness: running, socks: running.socks, readinessWait: readinessWait)
    }
}

extension NostrRelayManager {
    /// Relays reached through `session`.
    public init(session: PosternSession, relays: [String], log: AppLayerLogger? = nil) {
        self.init(activation: NetworkActivationService(session: session), relays: relays, log: log)
    }
}

extension GeoRelayDirectory {
    /// The directory fetched through `session`, cached in `cacheFile`.
    public init(session: PosternSession, sourceURL: URL, cacheFile: URL, log: AppLayerLogger? = nil) {
        self.init(sourceURL: sourceURL, cacheFile: cacheFile, http: ProxiedHTTPClient(activation: NetworkActivationService(session: session)),
                  log: log)
    }

    /// The hourly schedule, and a fetch whenever the session becomes ready.
    public func start(following session: PosternSession) {
        let updates = session.statusUpdates()
        let (torStatus, continuation) = AsyncStream.makeStream(of: TorStatus.self, bufferingPolicy: .bufferingNewest(1))
        let relay = Task {
            for await status in updates { continuation.yield(status.tor) }
            continuation.finish()
        }
        continuation.onTermination = { _ in relay.cancel() }
        start(torStatus: torStatus)
    }
}
