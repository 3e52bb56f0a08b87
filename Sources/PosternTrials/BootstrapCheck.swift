import BridgeConfig
import Foundation
import PosternLinkSpec
import PosternSystem

/// A real tor bootstrap through one bridge alone, in a child `postern run` with a fresh data
/// directory: the last step of `postern bridges test --bootstrap`, after the TCP and handshake
/// checks (PosternRuntime's `BridgeHealthCheck` takes it as its bootstrap step).
public struct BootstrapCheck: Sendable, Hashable {
    public var succeeded: Bool
    /// Time to 100 %, or until the failure.
    public var milliseconds: Double?
    /// "100%", or where it stalled and why ("stalled at 5% (conn): ...").
    public var detail: String

    public init(succeeded: Bool, milliseconds: Double?, detail: String) {
        self.succeeded = succeeded
        self.milliseconds = milliseconds
        self.detail = detail
    }

    /// Bootstraps through `line` in a child under `directory` (removed afterwards), with the
    /// plugins that serve its transport, within `timeout`.
    public static func run(through line: BridgeLine, directory: URL, plugins: [TransportPlugin], timeout: Duration,
                           torOptionsFile: String?, unsafeLogging: Bool,
                           executable: URL = ChildRun.currentExecutable) async -> BootstrapCheck {
        let started = ContinuousClock.now
        func elapsed() -> Double { ((ContinuousClock.now - started).seconds * 10000).rounded() / 10 }
        let child: ChildRun
        do {
            child = try ChildRun(.init(directory: directory, transport: line.transport.rawValue, bridges: [line],
                                       plugins: plugins.filter { $0.names.contains(line.transport) },
                                       torOptionsFile: torOptionsFile, unsafeLogging: unsafeLogging, warmFrom: nil,
                                       executable: executable))
        } catch {
            return BootstrapCheck(succeeded: false, milliseconds: nil, detail: "could not start the child: \(error)")
        }
        let outcome = await child.waitForReady(timeout: timeout)
        let events = child.events
        // In a task of its own: when the check was cancelled (interrupted), stop's grace waits must
        // still wait, and the child still gets its SIGTERM and clean exit before the SIGKILL.
        await Task {
            await child.stop()
            child.cleanUp()
        }.value
        switch outcome {
        case .ready:
            return BootstrapCheck(succeeded: true, milliseconds: (events.first { $0.event == "ready" }?.t ?? 0) * 1000, detail: "100%")
        case .failed(let reason, _):
            return BootstrapCheck(succeeded: false, milliseconds: elapsed(),
                                  detail: TrialRunner.failure(events: events, reason: reason).describedPlace)
        case .timedOut:
            return BootstrapCheck(succeeded: false, milliseconds: elapsed(),
                                  detail: TrialRunner.failure(events: events, reason: "no 100% within \(timeout.seconds.formatted()) s").describedPlace)
        }
    }
}

extension ABResult.Failure {
    /// "stalled at 5% (conn): reason", or the reason alone when no progress was reported.
    public var describedPlace: String {
        guard let progress else { return reason }
        return "stalled at \(progress)% (\(tag ?? "")): \(reason)"
    }
}
