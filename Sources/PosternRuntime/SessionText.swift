import Foundation
import ConnectionAssist
import PosternTor
import PosternSystem

// The text forms of a session's events: the lines `postern run` shows, for an app to show or log
// the same. Where each line goes (standard output, a status line, standard error) is the caller's.

extension AssistEvent {
    /// The line for one of connection assist's decisions; nil for a route chosen only because it
    /// is next in order (its "trying" line says enough). `racing`: the race strategy, which also
    /// leaves a route on failing connections or a failed probe.
    public func line(racing: Bool) -> String? {
        switch self {
        case .trying(let route, let position, let count, let cycle):
            var line = "trying \(route.label) (route \(position) of \(count)"
            if cycle > 1 { line += ", pass \(cycle)" }
            line += "): up to \(PlainText.number(route.limits.ceiling.seconds)) s, moving on after"
            line += " \(PlainText.number(route.limits.noProgressWindow.seconds)) s without progress"
            if racing { line += ", sooner on failing connections or a failed probe" }
            if route.transport == .dnstt {
                // Issue #23: the user should know what this last way out costs and shows.
                line += " (dnstt is tried last: it is slow, and the DNS resolver it goes through, and a censor watching it, can see a tunnel's queries)"
            }
            return line
        case .chose(let choice):
            guard choice.reason == .probePassed || choice.reason == .passesDiagnosis else { return nil }
            return "connection assist: choosing \(choice.route.label): \(choice)"
        case .probed(let route, let result):
            return "probe \(route.label): \(result.summary)"
        case .movedOn(let failure):
            return failure.skipped ? "passing over \(failure.route.label): \(failure)" : "moving on from \(failure.route.label): \(failure)"
        case .diagnosed(let route, let diagnosis):
            return "diagnosis \(route.label): \(diagnosis)"
        case .allFailed(let failures, let retryIn):
            let reasons = failures.map { failure in
                guard let diagnosis = failure.diagnosis else { return "\(failure.route.label): \(failure)" }
                return "\(failure.route.label): \(diagnosis.technique.words), \(diagnosis.confidence)"
            }.joined(separator: "; ")
            var line = "stalled: every route failed (\(reasons))"
            // The verdict: transports that should pass what was diagnosed and that no route here uses.
            let diagnosed = failures.compactMap(\.diagnosis).filter(\.rulesOutRoute)
            if !diagnosed.isEmpty {
                let used = Set(failures.map { $0.route.transport ?? .vanilla })
                var missing: [String] = []
                for diagnosis in diagnosed {
                    for transport in diagnosis.passes where !used.contains(transport) && !missing.contains(transport.rawValue) {
                        missing.append(transport.rawValue)
                    }
                }
                if diagnosed.count == failures.count {
                    line += "; none of your routes can pass it here"
                }
                if !missing.isEmpty {
                    line += "; would pass: \(missing.joined(separator: ", ")) bridges ('postern bridges add')"
                }
            }
            line += "; trying them all again in \(PlainText.number(retryIn.seconds)) s"
            if let last = failures.last { line += " (tor keeps trying \(last.route.label) meanwhile)" }
            return line
        case .connected(let route, let after):
            return "connection assist: connected via \(route.label) after \(String(format: "%.1f", after.seconds)) s; it goes first next time"
        }
    }
}

extension SettingsChange {
    /// What the change made of the route, that it reached the running tor without a restart, then
    /// its notes ("note: ...").
    public var lines: [String] {
        switch self {
        case .nowConnectionAssist:
            return ["settings changed: now connection assist; applied to the running tor without a restart"]
        case .nowFixed(let route, let notes):
            return ["settings changed: now \(route); applied to the running tor without a restart"] + notes.map(noteLine)
        case .assistRoutesReplaced(let nowTrying, let order, let notes):
            let first = nowTrying.map { "settings changed: now \($0) (connection assist); applied to the running tor without a restart" }
                ?? "settings changed: connection assist now tries \(order.map(\.rawValue).joined(separator: ", "))"
            return [first] + notes.map(noteLine)
        }
    }
}

extension SessionEvent {
    /// The lines of any event but `.status` (whose lines depend on what was shown before: see
    /// ``SessionStatusAnnouncer``; empty here): notes as "note: ...", connection assist's start
    /// and decisions (``AssistEvent/line(racing:)``), a settings change, "transport: ..." for a
    /// transport's problem, a warning's message.
    public func lines(racing: Bool) -> [String] {
        switch self {
        case .status:
            return []
        case .fixedRoute(_, let notes):
            return notes.map(noteLine)
        case .assistStarted(let order, let probing, let lastGoodFirst, let notes):
            var lines = ["connection assist: trying \(order.map(\.rawValue).joined(separator: ", ")) in this order" + (probing ? ", probing them all meanwhile" : "")]
            if let first = lastGoodFirst { lines.append("connection assist: \(first) goes first: it connected last time") }
            return lines + notes.map(noteLine)
        case .assist(let event):
            return event.line(racing: racing).map { [$0] } ?? []
        case .settingsApplied(let change):
            return change.lines
        case .transportProblem(let event):
            return ["transport: \(event)"]
        case .warning(let warning):
            return [warning.message]
        }
    }
}

private func noteLine(_ note: String) -> String { "note: \(note)" }

extension TorStatus {
    /// "[#########.....................]  30% Loading relay descriptors": the bootstrap percentage
    /// as a bar `width` characters wide (1 to 200), then the summary (the state's name before
    /// there is one).
    public func progressBar(width requestedWidth: Int = 30) -> String {
        let width = min(max(requestedWidth, 1), 200)
        let filled = width * min(max(bootstrapProgress, 0), 100) / 100
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let summary = bootstrapSummary.isEmpty ? state.name : bootstrapSummary
        return "[\(bar)] \(PlainText.leftPadded(String(bootstrapProgress), to: 3))% \(summary)"
    }

    /// The line for a bootstrap that reached no 100% within `deadline`, with where it stands and
    /// tor's last problem.
    public func stallLine(deadline: Duration) -> String {
        var line = "stalled: no 100% within \(PlainText.number(deadline.seconds)) s (at \(bootstrapProgress)%: \(bootstrapSummary))"
        if let bootstrapWarning { line += "; last problem: \(bootstrapWarning)" }
        return line + "; tor keeps trying"
    }
}

extension SessionStatus {
    /// "route: direct, 4.2 s": the route and the seconds since the session started.
    public var routeAndTime: String { "route: \(route), \(String(format: "%.1f", seconds)) s" }

    /// "ready: socks5 127.0.0.1:39050 (route: direct, 4.2 s)".
    public var readyLine: String { "ready: socks5 \(socks) (\(routeAndTime))" }

    /// "phase timings (seconds since start):", then each bootstrap milestone as
    /// "    1.25   10%  conn_done".
    public var phaseReport: String {
        let lines = phases.map { "  \(String(format: "%6.2f", $0.seconds))  \(PlainText.leftPadded(String($0.progress), to: 3))%  \($0.tag)" }
        return (["phase timings (seconds since start):"] + lines).joined(separator: "\n")
    }
}

/// What of a session's status is worth showing, as a terminal or a log would have it: a status
/// only when its state, percentage or stall changed; ready once per session; a stall once until
/// bootstrap moves again.
public struct SessionStatusAnnouncer: Sendable {
    /// One status change worth a line.
    public enum Announcement: Sendable, Hashable {
        /// Bootstrap moved: the progress bar (it replaces the previous one where the output can).
        case progress(String)
        /// The session is ready: the last progress bar, then the ready line and the phase timings.
        case ready(progressBar: String, lines: [String])
        /// No 100% within the stall timeout: the stall line.
        case stalled(String)
        /// tor failed: its error's message.
        case failed(String)
    }

    private let stallTimeout: Duration
    private var lastKey = ""
    private var announcedReady = false
    private var announcedStall = false

    /// `stallTimeout`: the deadline the stall line names (``SessionOptions/stallTimeout``).
    public init(stallTimeout: Duration) { self.stallTimeout = stallTimeout }

    /// Whether `status` differs from the last one seen in state, percentage or stall (it is then
    /// the last one seen). For outputs that show every change, such as JSON lines.
    public mutating func isChange(_ status: TorStatus) -> Bool {
        let key = "\(status.state.name)|\(status.bootstrapProgress)|\(status.bootstrapDidStall)"
        guard key != lastKey else { return false }
        lastKey = key
        return true
    }

    /// What `status` shows that was not shown yet, or nil.
    public mutating func announcement(for status: SessionStatus) -> Announcement? {
        let tor = status.tor
        guard isChange(tor) else { return nil }
        if tor.isReady {
            guard !announcedReady else { return nil }
            announcedReady = true
            return .ready(progressBar: tor.progressBar(), lines: [status.readyLine, status.phaseReport])
        } else if tor.bootstrapDidStall {
            guard !announcedStall else { return nil }
            announcedStall = true
            return .stalled(tor.stallLine(deadline: stallTimeout))
        } else if tor.isStarting {
            announcedStall = false
            return .progress(tor.progressBar())
        }
        return tor.state == .failed ? .failed(tor.lastError?.message ?? "tor failed") : nil
    }
}
