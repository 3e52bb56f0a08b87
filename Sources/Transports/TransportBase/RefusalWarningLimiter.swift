import Synchronization

/// Keeps refused SOCKS clients from flooding the warnings: the first refusal is a warning at once,
/// later ones at most one per ``interval``, each saying how many were refused quietly before it.
/// Refusals are cheap for a local user to cause (a connect is enough), and each warning reaches
/// stderr and the events file of `postern run`: without a limit, a loop of connects grows both
/// without bound.
public final class RefusalWarningLimiter: Sendable {
    public static let defaultInterval: Duration = .seconds(60)

    public let interval: Duration
    private struct State {
        var lastWarning: ContinuousClock.Instant?
        var quiet = 0
    }
    private let state = Mutex(State())

    public init(interval: Duration = defaultInterval) {
        self.interval = interval
    }

    /// Counts one refusal. Returns nil to stay quiet, or the number of refusals not warned about
    /// since the last warning (0 for the first) when this one is to be a warning.
    public func refusal(at now: ContinuousClock.Instant = .now) -> Int? {
        state.withLock { state in
            if let last = state.lastWarning, now - last < interval {
                state.quiet += 1
                return nil
            }
            defer { state = State(lastWarning: now, quiet: 0) }
            return state.quiet
        }
    }

    /// `message`, with the count of quiet refusals before it when there were some.
    public static func text(_ message: String, quietBefore quiet: Int) -> String {
        quiet == 0 ? message : "\(message) (\(quiet) more refused since the last warning)"
    }
}

extension RefusalWarningLimiter {
    /// Emits a `clientRejected` warning for one refusal, when the limit lets it through.
    func warn(_ events: TransportEventSink, _ transport: TransportName, _ message: String) {
        guard let quiet = refusal() else { return }
        events.emit(TransportEvent(kind: .clientRejected, severity: .warning, transport: transport,
                                   message: Self.text(message, quietBefore: quiet)))
    }
}
