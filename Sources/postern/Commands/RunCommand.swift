import Foundation
import Synchronization
import PosternCore
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
        run: { invocation in try await RunSession(invocation).run() })
}

/// What the run has published so far, shared by the status reporter and connection assist.
final class RunState: Sendable {
    struct Values {
        var route: String
        var assist: AssistSnapshot?
        var phases: [RunStatusRecord.PhaseTiming] = []
        /// Set when the run ends: late updates no longer rewrite the (removed) status file.
        var closed = false
    }
    let values: Mutex<Values>
    init(route: String) { values = Mutex(Values(route: route)) }
}

extension SettingsSource.Mode {
    var fixedPlan: RoutePlan? { if case .fixed(let plan) = self { plan } else { nil } }
}

/// One foreground run: owns the manager, renders progress, publishes status, handles signals.
final class RunSession: Sendable {
    private let invocation: Invocation
    private let manager = TorManager()

    init(_ invocation: Invocation) { self.invocation = invocation }

    func run() async throws -> Int32 {
        let arguments = invocation.arguments
        guard arguments.positionals.isEmpty else {
            throw invocation.usageError("unexpected argument '\(arguments.positionals[0])'")
        }
        let output = invocation.output
        let paths = invocation.paths
        let eventLog = try arguments.value("events-json").map { try RunEventLog(path: $0) }
        var strategy = AssistStrategy.race
        if let text = arguments.value("assist-strategy") {
            do { strategy = try AssistStrategy(parsing: text) } catch { throw invocation.usageError("--assist-strategy: \(error.message)") }
        }
        // External plugins are read once, at start; their processes start when a bridge needs them.
        let plugins = try invocation.bridgeStore().load().plugins
        let dataDirectory = arguments.value("data-dir").map { URL(fileURLWithPath: $0) } ?? paths.torDataDirectory
        let registry = try Transports.registry(plugins: plugins, stateLocation: dataDirectory)
        let dialFailures = Mutex<(@Sendable (TransportEvent) -> Void)?>(nil)
        let transportHost = TransportHost(registry: registry, events: TransportEventSink { event in
            eventLog?.transport(event)
            if event.kind == .dialFailed, let forward = dialFailures.withLock({ $0 }) { forward(event) }
            // Transport events carry no addresses or certs; problems are worth a line. A dial cut
            // short because its listener was stopped (connection assist moving on) is not one.
            let cutShort = event.kind == .dialFailed && event.message.hasSuffix("the operation was cancelled")
            if (event.severity == .error || event.severity == .warning) && !cutShort {
                output.error("transport: \(event)")
            }
        })
        for name in registry.names {
            if let external = registry.transport(named: name) as? ExternalTransport {
                output.print("note: \(name) bridges go through the external \(external.client.definition.label), started when first needed")
            }
        }
        let settings = try SettingsSource(invocation, transports: transportHost)
        var mode = try settings.mode()
        var configuration = try makeConfiguration(plan: mode.fixedPlan)
        if case .assist = mode {
            // Connection assist owns stall reporting (per route); tor starts off the network and
            // the first route switches it on.
            configuration.bootstrapDeadline = .seconds(30 * 86_400)
            configuration.options.append(AssistRunner.networkOff)
        }
        if case .fixed(let plan) = mode {
            for note in plan.notes { output.print("note: \(note)") }
        }
        let state = RunState(route: mode.fixedPlan?.route ?? "connection assist")
        eventLog?.started(route: mode.fixedPlan?.route ?? "auto")
        let everyStatus = eventLog == nil ? nil : await manager.statusUpdates(everyChange: true)
        let eventRecorder = Task {
            guard let eventLog, let everyStatus else { return }
            for await status in everyStatus { eventLog.observe(status) }
        }
        let socks = configuration.socks
        @Sendable func publish(_ status: TorStatus) -> RunStatusRecord {
            state.values.withLock {
                let record = RunStatusRecord(pid: getpid(), status: status, socks: status.socks ?? socks, route: $0.route,
                                             phases: $0.phases, assist: $0.assist)
                // Written under the lock so that no write can follow the removal at the end.
                if !$0.closed { try? record.write(to: paths.runStatusFile) }
                return record
            }
        }
        let json = invocation.json
        let probes = strategy == .race ? try AssistProbes(torOptions: configuration.options) : nil
        let assist = AssistRunner(manager: manager, settings: settings, output: output, json: json, strategy: strategy,
                                  probes: probes, eventLog: eventLog) { [manager] snapshot in
            state.values.withLock {
                $0.assist = snapshot
                if let route = snapshot.route { $0.route = route }
            }
            Task {
                let record = publish(await manager.currentStatus)
                if json {
                    output.print(String(decoding: (try? RunStatusRecord.encoder().encode(record)) ?? Data(), as: UTF8.self))
                }
            }
        }

        let stop = SignalWaiter(signals: [SIGINT, SIGTERM])
        let started = ContinuousClock.now
        let updates = await manager.statusUpdates()
        let reporter = Task { [invocation, configuration] in
            var lastKey = ""
            var announcedReady = false
            var announcedStall = false
            for await status in updates {
                let seconds = (ContinuousClock.now - started).seconds
                let phases = state.values.withLock { values in
                    if !status.bootstrapTag.isEmpty, status.bootstrapProgress > (values.phases.last?.progress ?? -1) {
                        values.phases.append(.init(progress: status.bootstrapProgress, tag: status.bootstrapTag,
                                                   summary: status.bootstrapSummary, seconds: seconds))
                    }
                    return values.phases
                }
                let record = publish(status)
                let key = "\(status.state.name)|\(status.bootstrapProgress)|\(status.bootstrapDidStall)"
                guard key != lastKey else { continue }
                lastKey = key
                if invocation.json {
                    output.print(String(decoding: (try? RunStatusRecord.encoder().encode(record)) ?? Data(), as: UTF8.self))
                    continue
                }
                if status.isReady {
                    if !announcedReady {
                        announcedReady = true
                        output.status(ProgressBar.render(status))
                        output.endStatus()
                        output.print("ready: socks5 \(status.socks ?? configuration.socks) (route: \(record.route), \(String(format: "%.1f", seconds)) s)")
                        output.print(PhaseReport.render(phases))
                    }
                } else if status.bootstrapDidStall {
                    if !announcedStall {
                        announcedStall = true
                        output.endStatus()
                        var line = "stalled: no 100% within \(configuration.bootstrapDeadline.seconds.formatted()) s"
                        line += " (at \(status.bootstrapProgress)%: \(status.bootstrapSummary))"
                        if let warning = status.bootstrapWarning { line += "; last problem: \(warning)" }
                        output.print(line + "; tor keeps trying")
                    }
                } else if status.state == .bootstrapping || status.state == .starting {
                    announcedStall = false
                    output.status(ProgressBar.render(status))
                } else if status.state == .failed {
                    output.endStatus()
                    output.error("postern run: error: \(status.lastError?.message ?? "tor failed")")
                }
            }
        }

        do {
            try await manager.start(configuration)
        } catch {
            reporter.cancel()
            eventRecorder.cancel()
            eventLog?.observe(await manager.currentStatus)
            eventLog?.stopped()
            try? FileManager.default.removeItem(at: paths.runStatusFile)
            throw CommandFailure("tor did not start: \(error)")
        }
        dialFailures.withLock { forward in
            forward = { [assist] event in
                assist.transportDialFailed(transport: event.transport.rawValue, code: event.error?.code.rawValue ?? "", kind: event.error?.kind.rawValue ?? "")
            }
        }
        if case .assist(let plan) = mode { await assist.start(plan) }

        // Settings changed by another postern process (or SIGHUP) reach the running tor by SETCONF.
        let hangups = SignalWaiter(signals: [SIGHUP])
        let watcher = Task { [manager] in
            var lastStamp = settings.storeStamp()
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                guard !Task.isCancelled else { return }
                let hangup = hangups.consume()
                let stamp = settings.storeStamp()
                guard hangup || stamp != lastStamp else { continue }
                lastStamp = stamp
                do {
                    let newMode = try settings.mode()
                    guard newMode != mode else { continue }
                    switch (mode, newMode) {
                    case (.assist, .assist(let plan)):
                        await assist.replace(plan)
                    case (.fixed, .assist(let plan)):
                        if !invocation.json {
                            output.endStatus()
                            output.print("settings changed: now connection assist; applied to the running tor without a restart")
                        }
                        await assist.start(plan)
                    case (_, .fixed(let newPlan)):
                        if case .assist = mode { await assist.stop() }
                        try await manager.reconfigure(newPlan.options, resetting: AssistRunner.managedKeys)
                        state.values.withLock {
                            $0.route = newPlan.route
                            $0.assist = nil
                        }
                        if !invocation.json {
                            output.endStatus()
                            output.print("settings changed: now \(newPlan.route); applied to the running tor without a restart")
                            for note in newPlan.notes { output.print("note: \(note)") }
                        }
                    }
                    mode = newMode
                } catch {
                    output.endStatus()
                    output.error("postern run: settings not applied: \(error)")
                }
            }
        }

        // Either a signal arrives or the core fails on its own.
        let failed = await withTaskGroup(of: Bool.self) { group in
            group.addTask { await stop.wait(); return false }
            group.addTask { [manager] in
                for await status in await manager.statusUpdates() where status.state == .failed { return true }
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        watcher.cancel()
        _ = await watcher.value
        await assist.stop()
        if !invocation.json { output.endStatus() }
        if !failed && !invocation.json { output.print("stopping tor…") }
        await manager.shutdown()
        await transportHost.stopAll()
        await Transports.stopPlugins()
        reporter.cancel()
        eventRecorder.cancel()
        eventLog?.stopped()
        state.values.withLock { values in
            values.closed = true
            try? FileManager.default.removeItem(at: paths.runStatusFile)
        }
        if !failed && !invocation.json { output.print("stopped") }
        return failed ? 1 : 0
    }

    private func makeConfiguration(plan: RoutePlan?) throws -> TorConfiguration {
        let arguments = invocation.arguments
        do {
            let socks = try arguments.value("socks").map { try SocksEndpoint(parsing: $0) } ?? .default
            var deadline = Duration.seconds(75)
            if let text = arguments.value("stall-timeout") {
                guard let seconds = Double(text), seconds > 0 else {
                    throw invocation.usageError("--stall-timeout needs a positive number of seconds, not '\(text)'")
                }
                deadline = .milliseconds(Int64(seconds * 1000))
            }
            var options: [TorOption] = []
            if let file = arguments.value("tor-options-file") {
                guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                    throw invocation.usageError("cannot read --tor-options-file '\(file)'")
                }
                options += try TorOption.parseLines(text)
            }
            options += plan?.options ?? []
            let dataDirectory = arguments.value("data-dir").map { URL(fileURLWithPath: $0) } ?? invocation.paths.torDataDirectory
            var configuration = TorConfiguration(dataDirectory: dataDirectory, socks: socks, bootstrapDeadline: deadline,
                                                 options: options)
            configuration.noticeLevelLog = invocation.unsafeLogging
            return configuration
        } catch let error as TorCoreError where error.kind == .usage {
            throw invocation.usageError(error.message)
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

extension Duration {
    var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}

/// Catches some POSIX signals through Dispatch rather than a raw handler. One task may `wait()`
/// for the first of them; a poller may instead `consume()` whether any arrived since it last asked.
final class SignalWaiter: Sendable {
    private let stream: AsyncStream<Int32>
    private let received = Mutex(0)
    nonisolated(unsafe) private let sources: [DispatchSourceSignal]

    init(signals: [Int32]) {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        self.stream = stream
        var sources: [DispatchSourceSignal] = []
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            sources.append(source)
        }
        self.sources = sources
        for source in sources {
            source.setEventHandler { [self] in
                self.received.withLock { $0 += 1 }
                continuation.yield(Int32(source.handle))
            }
            source.resume()
        }
    }

    /// Waits for the first signal. For a single waiter: the stream ends if that waiter is cancelled.
    func wait() async {
        for await _ in stream { return }
    }

    /// True when a signal arrived since the last call.
    func consume() -> Bool {
        received.withLock { count in
            defer { count = 0 }
            return count > 0
        }
    }
}
