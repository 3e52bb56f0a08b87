import Foundation
import PosternSystem
import Synchronization
import PosternCore
import PosternRuntime
import TransportBase

extension Command {
    static let run = Command(
        name: "run",
        summary: "Start the tor core in the foreground and serve SOCKS5 until interrupted",
        details: """
        Shows bootstrap progress, then prints "ready: socks5 HOST:PORT". Stops cleanly on SIGINT or
        SIGTERM. Apps waiting on the SOCKS port before tor is ready wait; nothing goes around tor.
        Bridges and the transport come from the settings store ('postern bridges', 'postern transport');
        changes made while it runs are applied to the running tor without a restart (also on SIGHUP).
        With the transport auto (the default), connection assist tries direct, your obfs4 bridges, the
        built-in obfs4 bridges, snowflake and any other transport with bridges, the route that worked
        last time on this network first, probing the others meanwhile; a route is left as soon as its
        connections fail towards several peers or its probe fails while another passes, and at the
        latest after its ceiling or no-progress window (defaults direct 45/30, obfs4 120/90,
        snowflake 300/120 s; 'postern transport limits' or --route-timeout change them).
        """,
        options: [
            .value("socks", "[HOST:]PORT", "SOCKS5 listener, loopback only (default 127.0.0.1:39050); PORT auto: tor picks a free one, shown when ready"),
            .value("data-dir", "DIR", "tor's data directory (default: <state dir>/tor)"),
            .value("bridges-file", "FILE", "use the bridge lines in FILE ('-' for standard input), one a line, for this run only (instead of the stored ones)"),
            .value("bridge", "LINE", repeatable: true, "like --bridges-file with one line; visible to every local user in the process list (warns)"),
            .value("transport", "NAME", "route for this run only: auto, direct or a transport name (default: the stored setting)"),
            .value("tor-options-file", "FILE", "extra tor options, one 'Key value' a line (private test networks)"),
            .value("stall-timeout", "SECONDS", "bootstrap deadline before a stall is reported (default 75); with auto, caps every route's ceiling"),
            .value("route-timeout", "KIND=CEILING/WINDOW", repeatable: true,
                   "auto: seconds a route may take in all and without progress, KIND direct or a transport (e.g. direct=45/30)"),
            .value("assist-strategy", "NAME", "auto: race (probe every route while tor tries one, leave a route on failure signals; the default) or sequential (one route after another by their windows)"),
            .value("builtin-bridges", "FILE", "use these bridge lines (or a JSON list) as the built-in bridges (private test networks)"),
            .flag("json", "print each status change as a JSON line instead of a progress bar"),
            .value("events-json", "FILE", "append timestamped events (milestones, first byte, ready, stall) as JSON lines (docs/AB-TRIALS.md)"),
        ],
        run: { invocation in try await RunCommand(invocation).run() })
}

/// One foreground `postern run`: parses, runs a ``PosternSession``, renders its events, handles
/// signals.
struct RunCommand {
    let invocation: Invocation

    init(_ invocation: Invocation) { self.invocation = invocation }

    func run() async throws -> Int32 {
        let arguments = invocation.arguments
        guard arguments.positionals.isEmpty else {
            throw invocation.usageError("unexpected argument '\(arguments.positionals[0])'")
        }
        let output = invocation.output
        let paths = invocation.paths
        var strategy = AssistStrategy.race
        if let text = arguments.value("assist-strategy") {
            do { strategy = try AssistStrategy(parsing: text) } catch { throw invocation.usageError("--assist-strategy: \(error.message)") }
        }
        // External plugins are read once, at start; their processes start when a bridge needs them.
        let plugins = try invocation.bridgeStore().load().plugins
        var options = try invocation.sessionOptions(defaultDataDirectory: paths.torDataDirectory)
        options.assistStrategy = strategy
        options.eventsFile = arguments.value("events-json")
        options.statusFile = paths.runStatusFile
        let registry = try Transports.registry(plugins: plugins, stateLocation: options.dataDirectory)
        for name in registry.names {
            if let external = registry.transport(named: name) as? ExternalTransport {
                output.print("note: \(name) bridges go through the external \(external.client.definition.label), started when first needed")
            }
        }
        let settings = try invocation.sessionSettings()
        let session: PosternSession
        do {
            session = try PosternSession(settings: settings, transports: registry, options: options)
        } catch {
            throw CommandFailure("--events-json: \(error.message)")
        }
        let renderer = RunRenderer(invocation: invocation, strategy: strategy, options: options)
        let events = session.events()
        let reporter = Task { for await event in events { renderer.render(event) } }
        let stop = SignalWaiter(signals: [SIGINT, SIGTERM])
        do {
            try await session.start()
        } catch {
            await reporter.value
            throw CommandFailure(error.message)
        }
        // Settings changed by another postern process reach the running tor by SETCONF; SIGHUP
        // asks for the check at once.
        let hangups = SignalWaiter(signals: [SIGHUP])
        // Either a signal arrives or the core fails on its own.
        let failed = await session.serve(until: { await stop.wait() }, reloadRequested: { hangups.consume() })
        if !invocation.json { output.endStatus() }
        if !failed && !invocation.json { output.print("stopping tor…") }
        await session.stop()
        await reporter.value
        if !failed && !invocation.json { output.print("stopped") }
        return failed ? 1 : 0
    }
}

/// Turns a session's events into `postern run`'s lines (or JSON lines with --json).
final class RunRenderer: Sendable {
    private let invocation: Invocation
    private let strategy: AssistStrategy
    private let stallTimeout: Duration
    private let socks: SocksEndpoint
    private struct Shown { var lastKey = ""; var announcedReady = false; var announcedStall = false }
    private let shown = Mutex(Shown())

    init(invocation: Invocation, strategy: AssistStrategy, options: SessionOptions) {
        self.invocation = invocation
        self.strategy = strategy
        stallTimeout = options.stallTimeout
        socks = options.socks
    }

    func render(_ event: SessionEvent) {
        let output = invocation.output
        let json = invocation.json
        switch event {
        case .status(let status, let cause):
            if json, cause == .assist { return printJSON(status) }
            renderStatus(status)
        case .fixedRoute(_, let notes):
            for note in notes { output.print("note: \(note)") }
        case .transportProblem(let event):
            output.error("transport: \(event)")
        case .warning(let warning):
            output.endStatus()
            output.error("postern run: \(warning.message)")
        case .assistStarted(let order, let probing, let lastGoodFirst, let notes):
            guard !json else { return }
            var line = "connection assist: trying \(order.joined(separator: ", ")) in this order"
            if probing { line += ", probing them all meanwhile" }
            output.print(line)
            if let first = lastGoodFirst { output.print("connection assist: \(first) goes first: it connected last time") }
            for note in notes { output.print("note: \(note)") }
        case .settingsApplied(let change):
            guard !json else { return }
            output.endStatus()
            switch change {
            case .nowConnectionAssist:
                output.print("settings changed: now connection assist; applied to the running tor without a restart")
            case .nowFixed(let route, let notes):
                output.print("settings changed: now \(route); applied to the running tor without a restart")
                for note in notes { output.print("note: \(note)") }
            case .assistRoutesReplaced(let nowTrying, let order, let notes):
                if let route = nowTrying {
                    output.print("settings changed: now \(route) (connection assist); applied to the running tor without a restart")
                } else {
                    output.print("settings changed: connection assist now tries \(order.joined(separator: ", "))")
                }
                for note in notes { output.print("note: \(note)") }
            }
        case .assist(let event):
            guard !json, let line = Self.line(event, racing: strategy == .race) else { return }
            output.endStatus()
            output.print(line)
        }
    }

    /// The line for one of connection assist's decisions (a choice in order goes without one).
    static func line(_ event: AssistEvent, racing: Bool) -> String? {
        switch event {
        case .trying(let route, let position, let count, let cycle):
            var line = "trying \(route.label) (route \(position) of \(count)"
            if cycle > 1 { line += ", pass \(cycle)" }
            line += "): up to \(route.limits.ceiling.seconds.formatted()) s, moving on after"
            line += " \(route.limits.noProgressWindow.seconds.formatted()) s without progress"
            if racing { line += ", sooner on failing connections or a failed probe" }
            return line
        case .chose(let choice):
            guard choice.reason == .probePassed else { return nil }
            return "connection assist: choosing \(choice.route.label): \(choice)"
        case .probed(let route, let result):
            return "probe \(route.label): \(result.summary)"
        case .movedOn(let failure):
            return failure.skipped ? "passing over \(failure.route.label): \(failure)" : "moving on from \(failure.route.label): \(failure)"
        case .allFailed(let failures, let retryIn):
            let reasons = failures.map { "\($0.route.label): \($0)" }.joined(separator: "; ")
            var line = "stalled: every route failed (\(reasons)); trying them all again in \(retryIn.seconds.formatted()) s"
            if let last = failures.last { line += " (tor keeps trying \(last.route.label) meanwhile)" }
            return line
        case .connected(let route, let after):
            return "connection assist: connected via \(route.label) after \(String(format: "%.1f", after.seconds)) s; it goes first next time"
        }
    }

    private func printJSON(_ status: SessionStatus) {
        invocation.output.print(String(decoding: (try? RunStatusRecord.encoder().encode(status.record)) ?? Data(), as: UTF8.self))
    }

    private func renderStatus(_ session: SessionStatus) {
        let output = invocation.output
        let status = session.tor
        let key = "\(status.state.name)|\(status.bootstrapProgress)|\(status.bootstrapDidStall)"
        enum Action { case none, json, ready, stall, progress, failed }
        let action = shown.withLock { shown -> Action in
            guard key != shown.lastKey else { return .none }
            shown.lastKey = key
            if invocation.json { return .json }
            if status.isReady {
                guard !shown.announcedReady else { return .none }
                shown.announcedReady = true
                return .ready
            } else if status.bootstrapDidStall {
                guard !shown.announcedStall else { return .none }
                shown.announcedStall = true
                return .stall
            } else if status.state == .bootstrapping || status.state == .starting {
                shown.announcedStall = false
                return .progress
            }
            return status.state == .failed ? .failed : .none
        }
        switch action {
        case .none: break
        case .json: printJSON(session)
        case .ready:
            let seconds = session.seconds
            output.status(ProgressBar.render(status))
            output.endStatus()
            output.print("ready: socks5 \(session.socks) (route: \(session.route), \(String(format: "%.1f", seconds)) s)")
            output.print(PhaseReport.render(session.phases))
        case .stall:
            output.endStatus()
            var line = "stalled: no 100% within \(stallTimeout.seconds.formatted()) s"
            line += " (at \(status.bootstrapProgress)%: \(status.bootstrapSummary))"
            if let warning = status.bootstrapWarning { line += "; last problem: \(warning)" }
            output.print(line + "; tor keeps trying")
        case .progress:
            output.status(ProgressBar.render(status))
        case .failed:
            output.endStatus()
            output.error("postern run: error: \(status.lastError?.message ?? "tor failed")")
        }
    }
}

enum ProgressBar {
    static func render(_ status: TorStatus, width: Int = 30) -> String {
        let filled = width * status.bootstrapProgress / 100
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let percent = String(status.bootstrapProgress).leftPadded(to: 3)
        let summary = status.bootstrapSummary.isEmpty ? status.state.name : status.bootstrapSummary
        return "[\(bar)] \(percent)% \(summary)"
    }
}

enum PhaseReport {
    static func render(_ phases: [RunStatusRecord.PhaseTiming]) -> String {
        var lines = ["phase timings (seconds since start):"]
        for phase in phases {
            lines.append("  \(String(format: "%6.2f", phase.seconds))  \(String(phase.progress).leftPadded(to: 3))%  \(phase.tag)")
        }
        return lines.joined(separator: "\n")
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
