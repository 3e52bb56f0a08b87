import BridgeConfig
import Foundation
import PosternLinkSpec
import PosternRuntime
import PosternSystem
import PosternTrials

extension Command {
    static let bridgesTest = Command(
        name: "test",
        summary: "Check that bridges are alive: TCP, the transport handshake, optionally a tor bootstrap",
        synopsis: "[ID... | --all | --builtin]",
        details: """
        Without IDs, tests every enabled stored bridge; --all includes disabled ones; --builtin tests
        the built-in bridges instead. Checks run in parallel (--parallel). For each bridge: TCP
        reachability and connect latency; the transport's handshake (obfs4: our client completes
        the handshake, so the bridge is alive and its cert right; snowflake: the broker answers and
        a data channel to a proxy opens; webtunnel: the url host is resolved and connected (the
        line's address is a placeholder and never dialled), then TLS, the upgrade request and the
        101 answer, each reported; dnstt: no TCP to the line's placeholder address, but the resolver
        reached (a DNS answer back over udp, dot or doh), the Noise handshake with the dnstt server
        and the stream's opening, each reported; a transport served by an external plugin ('postern transport
        plugin'): a SOCKS dial through the plugin to the bridge succeeds; vanilla: TCP only); with
        --bootstrap, a real tor bootstrap
        through that bridge alone in a child 'postern run'; with --deep, a transfer through each bridge
        alone long enough to see a freeze or a slow link: a bootstrap in a child 'postern run' (vanilla
        and obfs4 through a counting relay on loopback, which sees the bytes the bridge sends and when
        they stop), then the --deep-url download through it, worded as observed ("froze after ~16 KB
        ...", "downloaded 1.0 MB at ~2400 kbit/s"). Dead bridges are flagged with what was seen
        (refused, timeout, handshake failed, froze). Addresses stay scrubbed unless --unsafe-logging; bridges
        are named by their store ID. Exit status 1 when a tested bridge is dead.
        """,
        options: [
            .flag("all", "test every stored bridge, also those switched off"),
            .flag("builtin", "test the built-in bridges"),
            .value("transport", "NAME", "only bridges of this transport"),
            .value("parallel", "K", "bridges tested at once (default 10)"),
            .value("timeout", "SECONDS", "limit for the TCP connect and for the handshake, each (default 10)"),
            .flag("via-plugins", "dial through the external plugins also for names Postern implements itself (obfs4 through obfs4proxy)"),
            .flag("bootstrap", "also bootstrap tor through each bridge alone (a child postern run per bridge)"),
            .value("bootstrap-timeout", "SECONDS", "limit for each bootstrap (default 120)"),
            .flag("deep", "also a transfer through each bridge alone, long enough to see a freeze (a child postern run per bridge)"),
            .value("deep-url", "URL", "http:// URL downloaded through each bridge after its deep bootstrap"),
            .value("deep-bytes", "N", "bytes of the --deep-url download at most (default 1048576)"),
            .value("deep-timeout", "SECONDS", "limit for each deep check, bootstrap and download together (default 60)"),
            .value("tor-options-file", "FILE", "extra tor options for the bootstrap children (private test networks)"),
            .flag("json", "print the results as JSON"),
        ],
        run: { invocation in try await BridgesTestCommand(invocation).run() })
}

/// `postern bridges test`: parse, run the library's ``BridgeHealthCheck``, render.
struct BridgesTestCommand {
    typealias Candidate = BridgeHealthCheck.Candidate
    let invocation: Invocation

    init(_ invocation: Invocation) { self.invocation = invocation }

    func run() async throws -> Int32 {
        let arguments = invocation.arguments
        let policy = invocation.loggingPolicy
        let parallel = try invocation.wholeNumber("parallel", default: 10, range: 1...128)
        let timeout = Duration.milliseconds(Int64(try number("timeout", default: 10, range: 0.1...600) * 1000))
        let bootstrapTimeout = Duration.milliseconds(Int64(try number("bootstrap-timeout", default: 120, range: 1...3600) * 1000))
        var transportFilter: TransportName?
        if let name = arguments.value("transport") {
            guard let transport = try? TransportName(matching: name) else {
                throw invocation.usageError("--transport: '\(name)' is not a transport name")
            }
            transportFilter = transport
        }
        let deepTimeout = Duration.milliseconds(Int64(try number("deep-timeout", default: 60, range: 1...3600) * 1000))
        let deepBytes = try invocation.wholeNumber("deep-bytes", default: 1_048_576, range: 1...1_073_741_824)
        var deepURL: ProbeFetch.Target?
        if let text = arguments.value("deep-url") {
            do throws(TrialError) { deepURL = try ProbeFetch.Target(parsing: text) } catch {
                throw invocation.usageError("--deep-url must be an http:// URL with a host (https is not supported), not '\(text)'")
            }
        }
        if !arguments.flag("deep"), arguments.value("deep-url") != nil || arguments.value("deep-bytes") != nil
            || arguments.value("deep-timeout") != nil {
            throw invocation.usageError("--deep-url, --deep-bytes and --deep-timeout go with --deep")
        }
        let torOptionsFile = try invocation.checkedTorOptionsFile()
        let selection = try requestedSelection()
        let configuration = try invocation.bridgeStore().load()
        var candidates: [Candidate]
        do throws(BridgeConfigError) {
            candidates = try BridgeHealthCheck.candidates(selection, in: configuration, transport: transportFilter)
        } catch where error.code == .unknownBridgeID {
            throw CommandFailure("\(error.message) (see 'postern bridges list')")
        } catch {
            throw CommandFailure(error.message)
        }
        let plugins = arguments.flag("via-plugins") ? configuration.plugins.map { $0.replacingBuiltins() } : configuration.plugins
        let registry = try Transports.registry(handshakeTimeout: timeout, plugins: plugins,
                                               stateLocation: invocation.paths.stateDirectory)
        if selection == .builtin {
            // Built-in bridges of a transport this build has no client for (meek_lite): one note
            // per transport at the start, not a skipped row per bridge.
            let split = BridgeHealthCheck(registry: registry, timeout: timeout).splitUntestable(candidates)
            for (transport, count) in split.untestable {
                invocation.output.error("note: \(BridgeHealthReport.untestableNote(transport: transport, count: count))")
            }
            candidates = split.testable
        }
        guard !candidates.isEmpty else {
            throw CommandFailure("no bridges to test (add some with 'postern bridges add', or test the built-in ones with --builtin)")
        }

        // The batch's work directory (the children's bridge lines and tor data) goes with it.
        var batch: BootstrapCheck.Batch?
        if arguments.flag("bootstrap") {
            batch = BootstrapCheck.Batch(plugins: plugins, timeout: bootstrapTimeout, torOptionsFile: torOptionsFile,
                                         unsafeLogging: invocation.unsafeLogging)
        }
        var deepBatch: DeepCheck.Batch?
        if arguments.flag("deep") {
            deepBatch = DeepCheck.Batch(plugins: plugins, timeout: deepTimeout, download: deepURL, maximumBytes: deepBytes,
                                        torOptionsFile: torOptionsFile, unsafeLogging: invocation.unsafeLogging)
        }
        let output = invocation.output
        let check = BridgeHealthCheck(registry: registry, timeout: timeout, parallel: parallel, policy: policy)
        let total = candidates.count
        let bootstrapStep = batch.map { batch in { @Sendable (candidate: Candidate) -> BridgeHealth.Step in
            let outcome = await batch.run(through: candidate.line)
            return BridgeHealth.Step(result: outcome.succeeded ? .ok : .failed, milliseconds: outcome.milliseconds, detail: outcome.detail)
        } }
        let deepStep = deepBatch.map { batch in { @Sendable (candidate: Candidate) -> BridgeHealth.Transfer in
            let check = await batch.run(through: candidate.line)
            return BridgeHealth.Transfer(verdict: check.verdict.rawValue, detail: check.detail, milliseconds: check.milliseconds,
                                         bootstrapMilliseconds: check.bootstrapMilliseconds, bridgeBytes: check.bridgeBytes,
                                         frozeAfterBytes: check.frozeAfterBytes, downloadedBytes: check.downloadedBytes,
                                         kilobitsPerSecond: check.kilobitsPerSecond)
        } }
        // Ctrl-C or SIGTERM cancels the check: the bootstrap children are stopped, and the work
        // directory with their bridge lines goes with the batch before we exit.
        let stop = SignalWaiter(signals: [SIGINT, SIGTERM])
        let checking = Task {
            await check.report(candidates, bootstrap: bootstrapStep, deep: deepStep,
                               progress: { count in output.progress("testing bridges: \(count)/\(total) done") })
        }
        let watcher = Task {
            await stop.wait()
            guard !Task.isCancelled else { return }
            checking.cancel()
        }
        let report = await checking.value
        watcher.cancel()
        output.endProgress()
        await registry.stopPlugins()
        if checking.isCancelled {
            // The batch (and its work directory) goes when this returns, before the process exits.
            throw CommandFailure("interrupted: the checks were stopped\(bootstrapStep == nil && deepStep == nil ? "" : " and the bootstrap children with their work directory removed")")
        }
        try invocation.render(report, text: report.text)
        return report.dead > 0 ? 1 : 0
    }

    private func number(_ name: String, default value: Double, range: ClosedRange<Double>) throws -> Double {
        guard let text = invocation.arguments.value(name) else { return value }
        guard let number = Double(text), range.contains(number) else {
            throw invocation.usageError("--\(name) must be a number from \(range.lowerBound.formatted()) to \(range.upperBound.formatted()), not '\(text)'")
        }
        return number
    }

    private func requestedSelection() throws -> BridgeHealthCheck.Selection {
        let arguments = invocation.arguments
        if arguments.flag("builtin") {
            guard arguments.positionals.isEmpty, !arguments.flag("all") else {
                throw invocation.usageError("--builtin tests the built-in bridges: give no IDs and no --all with it")
            }
            return .builtin
        }
        guard !arguments.positionals.isEmpty else { return .stored(includeDisabled: arguments.flag("all")) }
        guard !arguments.flag("all") else { throw invocation.usageError("give bridge IDs or --all, not both") }
        return .ids(try invocation.bridgeIDs())
    }
}
