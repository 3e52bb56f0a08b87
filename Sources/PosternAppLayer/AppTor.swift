import BridgeConfig
import Foundation
import PosternTor
import PosternRuntime
import TransportBase

/// The tor app traffic goes through when a session may already run in another process (a
/// `postern run`): that one when its status file names a live session (no second tor), else a
/// session of the app's own on `settings`, or none when their Tor preference is off (then the app
/// layer goes direct, as the preference says).
public struct AppTor: Sendable {
    /// Which tor the app layer uses.
    public enum Source: Sendable {
        /// A session another process runs (a `postern run`), found through its status file.
        case attached(RunningSession)
        /// Prepared, not started: subscribe to its events, then ``start()``.
        case own(PosternSession)
        /// None: the Tor preference is off, and the app layer goes direct.
        case preferenceOff
    }

    /// Which tor this is.
    public let source: Source
    /// The app layer's switch for this tor (one per `AppTor`: it holds the activation policy).
    public let activation: NetworkActivationService

    /// Throws when the status file names a live process that is not provably our session
    /// (``RunningSession/find(statusFile:)``): neither that port nor a tor of our own beside it.
    public static func attachOrPrepare(statusFile: URL?, settings: SessionSettings, options: SessionOptions,
                                       transports: () throws -> TransportRegistry) throws -> AppTor {
        let store: BridgeStore? = if case .directory(let store) = settings.store { store } else { nil }
        if let statusFile, let running = try RunningSession.find(statusFile: statusFile) {
            return AppTor(source: .attached(running), activation: NetworkActivationService(running: running, store: store))
        }
        guard (try? settings.load().torEnabled) ?? true else {
            // Nothing runs; the service routes direct because the preference is off.
            return AppTor(source: .preferenceOff,
                          activation: NetworkActivationService(store: store, readiness: TorManager(), socks: options.socks))
        }
        let session = try PosternSession(settings: settings, transports: try transports(), options: options)
        return AppTor(source: .own(session), activation: NetworkActivationService(session: session))
    }

    /// The same, an own session getting Postern's transports and the settings' external plugins
    /// (``Transports/registry(plugins:stateLocation:)``, plugin state in the data directory).
    public static func attachOrPrepare(statusFile: URL?, settings: SessionSettings, options: SessionOptions) throws -> AppTor {
        let plugins = (try? settings.load().plugins) ?? []
        return try attachOrPrepare(statusFile: statusFile, settings: settings, options: options) {
            try Transports.registry(plugins: plugins, stateLocation: options.dataDirectory)
        }
    }

    /// Starts the app's own session (nothing for the other sources).
    public func start() async throws(SessionError) {
        if case .own(let session) = source { try await session.start() }
    }

    /// Stops the app's own session; an attached one keeps running.
    public func stop() async {
        if case .own(let session) = source { await session.stop() }
    }
}
