import PosternRuntime
import BridgeConfig
import Foundation
import PosternSystem
import PosternTrials

extension Command {
    static let ab = Command(
        name: "ab",
        summary: "A/B trials: compare routes into Tor (transports, direct) on this network",
        synopsis: "ROUTE ROUTE... [--trials N] [--parallel K]",
        details: """
        A route is 'direct', 'vanilla' or a transport name (obfs4, snowflake, ...) using your enabled
        bridges of that transport, or the built-in ones when you have none; 'plugin:NAME' is the same
        bridges through the external plugin for NAME ('postern transport plugin'), so that one run
        compares implementations: 'postern ab obfs4 plugin:obfs4' is Postern's obfs4 against obfs4proxy. Each trial is a child
        'postern run' with a fresh data directory and its own SOCKS port; trials are interleaved
        (A B A B ...) or shuffled with --seed, at most --parallel at a time. Per trial: time to the
        first byte from the bridge or proxy, every bootstrap milestone, time to 100%, and with
        --probe-url the time to the first byte and the throughput of a download through the route.
        Then a table per route (success rate, median and 90th percentile), pairwise Mann-Whitney U
        tests and bootstrap confidence intervals, and a verdict. A download that breaks after 100% is
        the route's failure, counted apart; a try that fails for the harness's reasons (the child
        could not start or crashed) is retried, shown apart and counted for no route. Results are
        kept under the state directory ('postern ab history'), with an HTML report ('postern ab
        report'); runs from several networks pool with 'postern ab merge'. See docs/AB-TRIALS.md.
        """,
        options: [
            .value("trials", "N", "trials per route (default 5)"),
            .value("parallel", "K", "children running at once (default 2)"),
            .value("order", "ORDER", "interleaved (default) or random"),
            .value("seed", "S", "seed for the random order and the bootstrap intervals (default: random, recorded)"),
            .flag("warm", "start each trial with the cached consensus of the route's last good trial (warm starts)"),
            .value("probe-url", "URL", "http:// URL fetched through each route once it is ready"),
            .value("probe-bytes", "N", "bytes of the probe download to time (default 1048576)"),
            .value("trial-timeout", "[ROUTE=]SECONDS", repeatable: true,
                   "give up on a trial after this long (default: direct 45, snowflake 300, others 120)"),
            .value("tor-options-file", "FILE", "extra tor options for every child (private test networks)"),
            .value("svg", "FILE", "also write the charts (time to 100%, probe first byte, throughput) to FILE"),
            .value("network", "LABEL", "name the network or vantage point of this run (for 'postern ab merge' and --ooni)"),
            .value("ooni", "FILE", "also write each trial as an OONI tor measurement (vanilla_tor / torsf), one JSON a line"),
            .value("probe-asn", "ASN", "the probe's AS number for --ooni (default AS0: unknown; nothing is looked up)"),
            .value("probe-cc", "CC", "the probe's two-letter country code for --ooni (default ZZ: unknown)"),
            .value("harness-retries", "N", "tries again after a harness error (default 2)"),
            .flag("json", "print the whole result (every trial) as JSON on stdout; the table goes to stderr"),
            .flag("csv", "print the trials as CSV on stdout; the table goes to stderr"),
        ],
        subcommands: [.abHistory, .abReport, .abMerge],
        run: { invocation in try await ABSession(invocation).run() })

    static let abHistory = Command(
        name: "history",
        summary: "List earlier A/B runs kept under the state directory",
        options: [.flag("json", "print the runs as JSON")],
        run: { invocation in
            try invocation.requireNoPositionals()
            let runs = TrialHistory(stateDirectory: invocation.paths.stateDirectory).load()
            if invocation.json {
                try invocation.output.json(runs.map(TrialHistory.Entry.init))
                return 0
            }
            guard !runs.isEmpty else {
                invocation.output.print("no A/B runs yet (start one with 'postern ab obfs4 snowflake')")
                return 0
            }
            invocation.output.print(TrialHistory.textTable(runs))
            return 0
        })
}

extension Command {
    static let abReport = Command(
        name: "report",
        summary: "Write a self-contained HTML page (table, verdict, charts, harness errors, trials) for a saved run",
        synopsis: "DIR|ID",
        options: [.value("output", "FILE", "where to write the page (default: DIR/report.html)")],
        run: { invocation in
            let positionals = invocation.arguments.positionals
            guard positionals.count == 1 else { throw invocation.usageError("give one run: its directory or its id ('postern ab history')") }
            let directory = TrialHistory(stateDirectory: invocation.paths.stateDirectory).runDirectory(positionals[0])
            let result: ABResult
            do { result = try TrialHistory.loadRun(at: directory) } catch { throw CommandFailure("\(error)") }
            let target = invocation.arguments.value("output").map { URL(fileURLWithPath: $0) } ?? directory.appendingPathComponent("report.html")
            do throws(TrialError) { try TrialHistory.writeAtomically(Data(ABReport.html(result).utf8), to: target) } catch { throw CommandFailure(error.message) }
            invocation.output.print(result.textTable)
            invocation.output.print("report: \(target.path)")
            return 0
        })

    static let abMerge = Command(
        name: "merge",
        summary: "Pool saved runs from several networks or vantage points into one table, per network and pooled",
        synopsis: "DIR|ID DIR|ID...",
        details: """
        Each run's network is its --network label (runs without one stand alone, named by id); runs
        with the same label pool into one network. The pooled rows treat every trial of a route
        alike wherever it ran (see docs/AB-TRIALS.md for what that can and cannot say).
        """,
        options: [.flag("json", "print the merge as JSON")],
        run: { invocation in
            let positionals = invocation.arguments.positionals
            guard !positionals.isEmpty else { throw invocation.usageError("give the runs to merge: directories or ids ('postern ab history')") }
            let results: [ABResult]
            do { results = try TrialHistory(stateDirectory: invocation.paths.stateDirectory).loadRuns(positionals) } catch {
                throw CommandFailure("\(error)")
            }
            let merged = MergedRuns.merge(results)
            try invocation.render(merged, text: merged.textReport)
            return 0
        })
}

/// One `postern ab` run: checks the arguments, runs the trials, shows progress, reports.
struct ABSession {
    let invocation: Invocation

    init(_ invocation: Invocation) { self.invocation = invocation }

    func run() async throws -> Int32 {
        let request = try parseRequest()
        let output = invocation.output, arguments = invocation.arguments
        // Ctrl-C or SIGTERM stops the children (none is left running) and keeps the finished trials.
        let stop = SignalWaiter(signals: [SIGINT, SIGTERM])
        let outcome: ABRun.Outcome
        do throws(TrialError) {
            outcome = try await ABRun.execute(request, interruption: { await stop.wait() }) { event in Self.show(event, on: output) }
        } catch where error.kind == .usage {
            throw invocation.usageError(error.message)
        } catch where error.code == .chartsFile {
            throw CommandFailure("cannot write --svg \(arguments.value("svg") ?? ""): \(error.message)")
        } catch where error.code == .measurementsFile {
            throw CommandFailure("cannot write --ooni \(arguments.value("ooni") ?? ""): \(error.message)")
        } catch {
            throw CommandFailure(error.message)
        }
        let report = outcome.result.textReport
        if arguments.flag("json") {
            output.error(report)
            try output.json(outcome.result)
        } else if arguments.flag("csv") {
            output.error(report)
            output.print(outcome.result.csv, terminator: "")
        } else {
            output.print(report)
        }
        if let note = outcome.interruptionNote {
            output.error("postern ab: \(note)")
            return 1
        }
        return 0
    }

    /// The run the arguments ask for; a usage error for the first argument that cannot work.
    private func parseRequest() throws -> ABRun.Request {
        let arguments = invocation.arguments
        let routeNames = arguments.positionals
        guard !routeNames.isEmpty else {
            throw invocation.usageError("give two or more routes to compare, e.g. 'postern ab obfs4 snowflake' (or one, to measure it alone)")
        }
        let trials = try invocation.wholeNumber("trials", default: 5, range: 1...ABRun.Request.maximumTrialsPerRoute)
        let parallel = try invocation.wholeNumber("parallel", default: 2, range: 1...ABRun.Request.maximumParallel)
        let probeBytes = try invocation.wholeNumber("probe-bytes", default: 1 << 20, range: 1...ABRun.Request.maximumProbeBytes)
        let orderText = arguments.value("order") ?? "interleaved"
        guard let order = TrialOrder(rawValue: orderText) else {
            throw invocation.usageError("--order must be interleaved or random, not '\(orderText)'")
        }
        var seed: UInt64?
        if let text = arguments.value("seed") {
            guard let value = UInt64(text) else { throw invocation.usageError("--seed must be a whole number, not '\(text)'") }
            seed = value
        }
        var probeTarget: ProbeFetch.Target?
        if let text = arguments.value("probe-url") {
            do throws(TrialError) {
                probeTarget = try ProbeFetch.Target(parsing: text)
            } catch {
                throw invocation.usageError(error.message)
            }
        }
        let harnessRetries = try invocation.wholeNumber("harness-retries", default: 2, range: 0...ABRun.Request.maximumHarnessRetries)
        var network: NetworkLabel?
        if let text = arguments.value("network") {
            guard let label = NetworkLabel(text) else {
                throw invocation.usageError("--network must be a label of 1 to 64 characters on one line, without control characters")
            }
            network = label
        }
        let ooniProbe: OONIMeasurement.Probe
        do { ooniProbe = try .validated(asn: arguments.value("probe-asn"), countryCode: arguments.value("probe-cc")) } catch {
            throw invocation.usageError("\(error)")
        }
        if arguments.value("ooni") == nil && (arguments.value("probe-asn") != nil || arguments.value("probe-cc") != nil) {
            throw invocation.usageError("--probe-asn and --probe-cc go with --ooni FILE")
        }
        if arguments.flag("json") && arguments.flag("csv") { throw invocation.usageError("choose --json or --csv, not both") }
        let timeouts: [String: Double]
        do throws(TrialError) { timeouts = try TrialRoute.timeouts(for: routeNames, given: arguments.all("trial-timeout")) } catch {
            throw invocation.usageError(error.message)
        }
        let torOptionsFile = try invocation.checkedTorOptionsFile()
        let ooni = arguments.value("ooni").map { file in
            ABRun.OONIOutput(file: URL(fileURLWithPath: file), probe: ooniProbe, softwareVersion: PosternVersion.string,
                             torVersion: PosternVersion.torCore)
        }
        return ABRun.Request(routes: try resolveRoutes(routeNames, timeouts: timeouts), trialsPerRoute: trials, parallel: parallel,
                             order: order, seed: seed, warm: arguments.flag("warm"), probeTarget: probeTarget, probeBytes: probeBytes,
                             torOptionsFile: torOptionsFile, unsafeLogging: invocation.unsafeLogging,
                             network: network, harnessRetries: harnessRetries,
                             history: TrialHistory(stateDirectory: invocation.paths.stateDirectory),
                             svgFile: arguments.value("svg").map { URL(fileURLWithPath: $0) }, ooni: ooni)
    }

    /// The routes the library resolves from the names, with the store's bridges and plugins and
    /// this build's transports.
    private func resolveRoutes(_ names: [String], timeouts: [String: Double]) throws -> [TrialRoute] {
        let configuration: BridgeConfiguration
        do { configuration = try invocation.bridgeStore().load() } catch { throw CommandFailure(error.message) }
        let available = try Transports.registry(plugins: configuration.plugins).names.map(\.rawValue)
        do throws(TrialError) {
            return try TrialRoute.resolve(names, timeouts: timeouts, configuration: configuration, available: available,
                                          builtins: try? BuiltinBridges.bundled(rules: Transports.argumentRules)) { Transports.plugin(serving: $0, in: configuration.plugins) }
        } catch where error.kind == .usage {
            throw invocation.usageError(error.message)
        } catch {
            throw CommandFailure(error.message)
        }
    }

    /// The run's events on stderr: the start, every harness error, and the live view on a terminal
    /// or else a line per finished trial.
    static func show(_ event: ABRun.Event, on output: Output) {
        switch event {
        case .started(let start):
            output.error("postern ab: \(start)")
        case .progress(let progress):
            if let line = progress.harnessErrorLine {
                // Said whether or not stderr is a terminal: it is not the route's, and the user should know.
                output.endProgress()
                output.error(line)
            }
            if output.errorIsTerminal {
                output.progress(progress.statusLine)
            } else if let line = progress.finishedTrialLine {
                // Not a terminal: one line per finished trial, no redrawing.
                output.error(line)
            }
        case .interrupting:
            output.endProgress()
            output.error("postern ab: interrupted; stopping the running trials")
        case .trialsFinished:
            output.endProgress()
        }
    }
}
