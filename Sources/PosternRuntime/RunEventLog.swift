import Foundation
import Synchronization
import ConnectionAssist
import PosternTor
import TransportBase

/// A session's events file (`postern run --events-json FILE`): a machine-readable account of one run, one JSON object a line,
/// appended as things happen (so a parent process can follow it while the run goes on). Written
/// for `postern ab` and `postern bridges test --bootstrap`, documented in docs/AB-TRIALS.md.
///
/// Every line has `t` (seconds since the log was opened, monotonic clock), `wall` (Unix time) and
/// `event`:
/// - `start`: `pid`, `route` ("direct", "bridges (obfs4)", …; never an address);
/// - `transport`: a PT event, `kind` (dial-started, connected, dial-failed, …), `transport`, `message`;
/// - `first-byte`: once, the first sign that bytes came back from the first hop, with `source`:
///   a PT's `connected` event (obfs4: the server's handshake reply verified; snowflake: the data
///   channel to a proxy open) or, without a PT, tor's bootstrap tag `handshake_done` /
///   `ap_handshake_done` (the TLS handshake with the bridge or relay completed) or any later tag
///   that needs a live connection;
/// - `bootstrap`: each new bootstrap milestone, `progress`, `tag`, `summary`;
/// - `warning`: a bootstrap warning from tor, with `progress`, `tag` and `warning` (the reason);
/// - `ready`: 100 % and the SOCKS listener bound, `socks` (the bound address: with `--socks auto`
///   the port tor chose);
/// - `stalled`: the stall deadline passed, `progress`, `tag`, `warning`;
/// - `failed`: the core failed, `message` and `code` (TorCoreError's code, e.g. invalid-configuration,
///   filesystem, tor-exited: what tells a harness fault from the route's);
/// - `stopped`: the run ended;
/// - connection assist's decisions (race and sequential), by route key, never an address:
///   `assist-probe` (`route`, `outcome` passed|failed|skipped, `ms`, `problem`), `assist-choose`
///   (`route`, `choice`: first-in-order, probe-passed, next-in-order, new-in-settings),
///   `assist-move` (`route`, `reason`: no-progress, ceiling-reached, connections-failing,
///   probe-failed, unavailable, settings-changed; `problem`, `failures`, `peers`, `skipped`),
///   `assist-all-failed` (`retryIn`) and `assist-connected` (`route`, `seconds`).
/// The file is created with mode 0600. Bridge lines never reach it (PT messages carry none).
package final class RunEventLog: Sendable {
    private let descriptor: Int32
    private let origin = ContinuousClock.now
    private let state = Mutex(State())

    private struct State {
        var firstByteSeen = false
        var lastProgress = -1
        var lastWarning: String?
        var readySeen = false
        var stallSeen = false
        var failedSeen = false
    }

    /// Tags that tor reports only once a connection has answered. Tags below them (conn, handshake,
    /// the *_pt/*_proxy steps) are reached before a byte comes back; loading_* and enough_dirinfo
    /// can come from a cached consensus alone.
    static let contactTags: Set<String> = ["handshake_done", "ap_handshake_done", "onehop_create", "requesting_status",
                                           "requesting_descriptors", "circuit_create", "done"]

    package init(file: URL) throws(SessionError) {
        descriptor = open(file.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw SessionError(.file, "cannot open the events file \(file.path): \(String(cString: strerror(errno)))")
        }
        fchmod(descriptor, 0o600)
    }

    deinit { close(descriptor) }

    func started(route: RouteName) {
        write("start", ["pid": .int(Int(getpid())), "route": .string(route.rawValue)])
    }

    func transport(_ event: TransportEvent) {
        write("transport", ["kind": .string(event.kind.rawValue), "transport": .string(event.transport.rawValue),
                            "message": .string(event.message)])
        if event.kind == .connected { firstByte(source: "\(event.transport) \(event.kind)") }
    }

    func assist(_ event: AssistEvent) {
        switch event {
        case .probed(let route, let result):
            var fields: [String: Field] = ["route": .string(route.key), "outcome": .string(result.outcome.rawValue),
                                           "ms": .double(result.milliseconds)]
            if let problem = result.problem { fields["problem"] = .string(problem.rawValue) }
            write("assist-probe", fields)
        case .diagnosed(let route, let diagnosis):
            write("assist-diagnosis", ["route": .string(route.key), "technique": .string(diagnosis.technique.rawValue),
                                       "confidence": .string(diagnosis.confidence.rawValue), "observed": .string(diagnosis.observed),
                                       "passes": .string(diagnosis.passes.map(\.rawValue).joined(separator: ",")),
                                       "rulesOutRoute": .int(diagnosis.rulesOutRoute ? 1 : 0)])
        case .chose(let choice):
            write("assist-choose", ["route": .string(choice.route.key), "choice": .string(choice.reason.rawValue)])
        case .movedOn(let failure):
            var fields: [String: Field] = ["route": .string(failure.route.key), "reason": .string(failure.reason.rawValue),
                                           "skipped": .int(failure.skipped ? 1 : 0)]
            if let problem = failure.problem ?? failure.probe?.problem { fields["problem"] = .string(problem.rawValue) }
            if let diagnosis = failure.diagnosis { fields["technique"] = .string(diagnosis.technique.rawValue) }
            if failure.reason == .connectionsFailing {
                fields["failures"] = .int(failure.failures)
                fields["peers"] = .int(failure.distinctPeers)
            }
            write("assist-move", fields)
        case .allFailed(_, let retryIn):
            write("assist-all-failed", ["retryIn": .double(retryIn.seconds)])
        case .connected(let route, let after):
            write("assist-connected", ["route": .string(route.key), "seconds": .double((after.seconds * 1000).rounded() / 1000)])
        case .trying:
            break
        }
    }

    func observe(_ status: TorStatus) {
        let (newMilestone, newWarning, nowReady, nowStalled, nowFailed) = state.withLock { state in
            let milestone = !status.bootstrapTag.isEmpty && status.bootstrapProgress > state.lastProgress
            if milestone { state.lastProgress = status.bootstrapProgress }
            let warning = status.bootstrapWarning != nil && status.bootstrapWarning != state.lastWarning
            state.lastWarning = status.bootstrapWarning
            let ready = status.isReady && !state.readySeen
            if ready { state.readySeen = true }
            let stalled = status.bootstrapDidStall && !state.stallSeen
            state.stallSeen = status.bootstrapDidStall
            let failed = status.state == .failed && !state.failedSeen
            if failed { state.failedSeen = true }
            return (milestone, warning, ready, stalled, failed)
        }
        if newMilestone {
            write("bootstrap", ["progress": .int(status.bootstrapProgress), "tag": .string(status.bootstrapTag),
                                "summary": .string(status.bootstrapSummary)])
            if Self.contactTags.contains(status.bootstrapTag) { firstByte(source: "tor \(status.bootstrapTag)") }
        }
        if newWarning, let warning = status.bootstrapWarning {
            write("warning", ["progress": .int(status.bootstrapProgress), "tag": .string(status.bootstrapTag),
                              "warning": .string(warning)])
        }
        if nowReady { write("ready", ["socks": .string(status.socks?.description ?? "")]) }
        if nowStalled {
            var fields: [String: Field] = ["progress": .int(status.bootstrapProgress), "tag": .string(status.bootstrapTag)]
            if let warning = status.bootstrapWarning { fields["warning"] = .string(warning) }
            write("stalled", fields)
        }
        if nowFailed {
            var fields: [String: Field] = ["message": .string(status.lastError?.message ?? "tor failed")]
            if let error = status.lastError { fields["code"] = .string(error.code.description) }
            write("failed", fields)
        }
    }

    /// The run failed for a reason of its own, not tor's (a fixed route that cannot work): an A/B
    /// trial's harness reads this record and ends the trial at once.
    func failed(code: String, message: String) {
        write("failed", ["code": .string(code), "message": .string(message)])
    }

    func stopped() { write("stopped", [:]) }

    private func firstByte(source: String) {
        let first = state.withLock { state in
            defer { state.firstByteSeen = true }
            return !state.firstByteSeen
        }
        if first { write("first-byte", ["source": .string(source)]) }
    }

    enum Field: Encodable {
        case int(Int), double(Double), string(String)
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .int(let value): try container.encode(value)
            case .double(let value): try container.encode(value)
            case .string(let value): try container.encode(value)
            }
        }
    }

    private func write(_ event: String, _ fields: [String: Field]) {
        var all = fields
        all["event"] = .string(event)
        all["t"] = .double(((ContinuousClock.now - origin).seconds * 1_000_000).rounded() / 1_000_000)
        all["wall"] = .double((Date().timeIntervalSince1970 * 1000).rounded() / 1000)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(all) else { return }
        let line = Array(data) + [0x0A]
        // One write(2) per line on an O_APPEND descriptor: a reader never sees half a line from us
        // interleaved with another (lines are far below PIPE_BUF-like limits for regular files).
        state.withLock { _ in
            _ = line.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
        }
    }
}
