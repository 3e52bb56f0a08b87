import BridgeConfig
import Foundation
import PosternAppLayer
import PosternCore
import PosternRuntime
import Synchronization

/// The tor an app-layer command (`nostr`, `geo`) goes through: a running `postern run` when its
/// status file shows one (no second tor), else a session of its own on the stored settings, or
/// none when the Tor preference is off (then the app layer goes direct).
struct TorRoute: Sendable {
    enum Kind: Sendable {
        case attached(RunningSession)
        case own(PosternSession)
        case preferenceOff
    }

    let kind: Kind
    let activation: NetworkActivationService
    private let reporter: Task<Void, Never>?

    static func open(_ invocation: Invocation, dataDirectory: URL, command: String) async throws -> TorRoute {
        let output = invocation.output
        let store = try invocation.bridgeStore()
        if let running = RunningSession.find(statusFile: invocation.paths.runStatusFile) {
            output.error("\(command): using the tor of the running 'postern run' (pid \(running.pid)) at socks5 \(running.socks)")
            return TorRoute(kind: .attached(running), activation: NetworkActivationService(running: running, store: store), reporter: nil)
        }
        let options = try invocation.sessionOptions(defaultDataDirectory: dataDirectory)
        let settings = try invocation.sessionSettings()
        let torWanted = (try? store.load().torEnabled) ?? true
        guard torWanted else {
            return TorRoute(kind: .preferenceOff, activation: NetworkActivationService(store: store, readiness: TorManager(), socks: options.socks),
                            reporter: nil)
        }
        let plugins = (try? store.load().plugins) ?? []
        let registry = try Transports.registry(plugins: plugins, stateLocation: dataDirectory)
        let session: PosternSession
        do {
            session = try PosternSession(settings: settings, transports: registry, options: options)
        } catch {
            throw CommandFailure(error.message)
        }
        let events = session.events()
        // Only what the user must know goes to stderr: where tor got through, and problems.
        let reporter = Task {
            var announced = false
            for await event in events {
                switch event {
                case .status(let status, _) where status.isReady && !announced:
                    announced = true
                    output.error("\(command): tor ready (route: \(status.route), \(String(format: "%.1f", status.seconds)) s)")
                case .transportProblem(let problem):
                    output.error("\(command): transport: \(problem)")
                case .warning(let warning):
                    output.error("\(command): \(warning.message)")
                default:
                    break
                }
            }
        }
        do {
            try await session.start()
        } catch {
            await reporter.value
            throw CommandFailure(error.message)
        }
        return TorRoute(kind: .own(session), activation: NetworkActivationService(session: session), reporter: reporter)
    }

    /// Stops this command's own tor (an attached one keeps running).
    func close() async {
        if case .own(let session) = kind {
            await session.stop()
            await reporter?.value
        }
    }
}
