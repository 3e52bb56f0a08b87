import Foundation
import PosternSystem
import ConnectionAssist
import PosternTor
import PosternRuntime

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
            .torOptionsFile,
            .value("stall-timeout", "SECONDS", "bootstrap deadline before a stall is reported (default 75); with auto, caps every route's ceiling"),
            .value("route-timeout", "KIND=CEILING/WINDOW", repeatable: true,
                   "auto: seconds a route may take in all and without progress, KIND direct or a transport (e.g. direct=45/30)"),
            .value("assist-strategy", "NAME", "auto: race (probe every route while tor tries one, leave a route on failure signals; the default) or sequential (one route after another by their windows)"),
            .builtinBridges,
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
        try invocation.requireNoPositionals()
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
        options.eventsFile = arguments.value("events-json").map { URL(fileURLWithPath: $0) }
        options.statusFile = paths.runStatusFile
        let registry = try Transports.registry(plugins: plugins, stateLocation: options.dataDirectory)
        for note in registry.externalTransportNotes { output.print(note) }
        let settings = try invocation.sessionSettings(for: options)
        let session: PosternSession
        do {
            session = try PosternSession(settings: settings, transports: registry, options: options)
        } catch {
            throw CommandFailure("--events-json: \(error.message)")
        }
        let events = session.events()
        let reporter = Task {
            var renderer = RunRenderer(invocation: invocation, strategy: strategy, options: options)
            for await event in events { renderer.render(event) }
        }
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

/// Where `postern run` puts a session's lines (the library's text forms): standard output, the
/// status line, standard error, or JSON lines with --json.
struct RunRenderer {
    private let invocation: Invocation
    private let racing: Bool
    private var announcer: SessionStatusAnnouncer

    init(invocation: Invocation, strategy: AssistStrategy, options: SessionOptions) {
        self.invocation = invocation
        racing = strategy == .race
        announcer = SessionStatusAnnouncer(stallTimeout: options.stallTimeout)
    }

    mutating func render(_ event: SessionEvent) {
        let output = invocation.output
        let lines = event.lines(racing: racing)
        switch event {
        case .status(let status, let cause):
            if invocation.json, cause == .assist { return printJSON(status) }
            renderStatus(status)
        case .fixedRoute:
            for line in lines { output.print(line) }
        case .transportProblem:
            for line in lines { output.error(line) }
        case .warning:
            output.endStatus()
            for line in lines { output.error("postern run: \(line)") }
        case .assistStarted:
            guard !invocation.json else { return }
            for line in lines { output.print(line) }
        case .settingsApplied, .assist:
            guard !invocation.json, !lines.isEmpty else { return }
            output.endStatus()
            for line in lines { output.print(line) }
        }
    }

    private func printJSON(_ status: SessionStatus) {
        invocation.output.print((try? status.record.jsonLine()) ?? "")
    }

    private mutating func renderStatus(_ status: SessionStatus) {
        let output = invocation.output
        if invocation.json {
            if announcer.isChange(status.tor) { printJSON(status) }
            return
        }
        switch announcer.announcement(for: status) {
        case nil:
            break
        case .progress(let bar):
            output.status(bar)
        case .ready(let bar, let lines):
            output.status(bar)
            output.endStatus()
            for line in lines { output.print(line) }
        case .stalled(let line):
            output.endStatus()
            output.print(line)
        case .failed(let message):
            output.endStatus()
            output.error("postern run: error: \(message)")
        }
    }
}
