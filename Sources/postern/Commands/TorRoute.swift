import BridgeConfig
import Foundation
import PosternAppLayer
import PosternTor
import PosternRuntime
import Synchronization

/// The tor an app-layer command (`nostr`, `geo`) goes through (``AppTor``: a running `postern run`,
/// else a session of its own on the stored settings), with what the user must know on stderr.
struct TorRoute: Sendable {
    let tor: AppTor
    private let reporter: Task<Void, Never>?
    var activation: NetworkActivationService { tor.activation }

    static func open(_ invocation: Invocation, dataDirectory: URL, command: String) async throws -> TorRoute {
        let output = invocation.output
        let options = try invocation.sessionOptions(defaultDataDirectory: dataDirectory)
        let settings = try invocation.sessionSettings(for: options)
        let tor: AppTor
        do {
            tor = try AppTor.attachOrPrepare(statusFile: invocation.paths.runStatusFile, settings: settings, options: options)
        } catch let error as SessionError {
            throw CommandFailure(error.message)
        }
        guard case .own(let session) = tor.source else {
            if case .attached(let running) = tor.source {
                output.error("\(command): using the tor of the running 'postern run' (pid \(running.pid)) at socks5 \(running.socks)")
            }
            return TorRoute(tor: tor, reporter: nil)
        }
        let events = session.events()
        let reporter = Task {
            var announced = false
            for await event in events {
                switch event {
                case .status(let status, _) where status.isReady && !announced:
                    announced = true
                    output.error("\(command): tor ready (\(status.routeAndTime))")
                case .transportProblem, .warning:
                    for line in event.lines(racing: false) { output.error("\(command): \(line)") }
                default:
                    break
                }
            }
        }
        do {
            try await tor.start()
        } catch {
            await reporter.value
            throw CommandFailure(error.message)
        }
        return TorRoute(tor: tor, reporter: reporter)
    }

    /// Stops this command's own tor (an attached one keeps running).
    func close() async {
        await tor.stop()
        await reporter?.value
    }
}
