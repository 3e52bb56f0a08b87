import BridgeConfig
import Foundation
import Synchronization
import TransportBase
import WebtunnelTransport

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
        101 answer, each reported; a transport served by an external plugin ('postern transport
        plugin'): a SOCKS dial through the plugin to the bridge succeeds; vanilla: TCP only); with
        --bootstrap, a real tor bootstrap
        through that bridge alone in a child 'postern run'. Dead bridges are flagged with the reason
        (refused, timeout, handshake failed). Addresses stay scrubbed unless --unsafe-logging; bridges
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
            .value("tor-options-file", "FILE", "extra tor options for the bootstrap children (private test networks)"),
            .flag("json", "print the results as JSON"),
        ],
        run: { invocation in try await BridgeHealthCheck(invocation).run() })
}

/// The outcome of testing one bridge.
struct BridgeHealth: Codable, Sendable {
    struct Step: Codable, Sendable {
        /// "ok", "failed" or "skipped".
        var result: String
        var milliseconds: Double?
        var detail: String
    }

    /// Store ID, or "builtin-<transport>-<n>" for a built-in bridge.
    var id: String
    var transport: String
    /// Scrubbed unless --unsafe-logging.
    var bridge: String
    var tcp: Step
    /// webtunnel only: the TLS handshake with the web server (certificate and servername checked).
    var tls: Step?
    /// webtunnel only: the upgrade request on the secret path and the server's answer.
    var upgrade: Step?
    var handshake: Step
    var bootstrap: Step?
    var alive: Bool
    /// Why the bridge is flagged, in words; nil when alive.
    var reason: String?
}

struct BridgeHealthCheck {
    let invocation: Invocation

    init(_ invocation: Invocation) { self.invocation = invocation }

    struct Candidate: Sendable {
        var id: String
        var line: BridgeLine
    }

    func run() async throws -> Int32 {
        let arguments = invocation.arguments
        let policy = invocation.loggingPolicy
        let parallel = try number("parallel", default: 10, range: 1...128)
        let timeout = Duration.milliseconds(Int64(try number("timeout", default: 10, range: 0.1...600) * 1000))
        let bootstrapTimeout = Duration.milliseconds(Int64(try number("bootstrap-timeout", default: 120, range: 1...3600) * 1000))
        var transportFilter: TransportName?
        if let name = arguments.value("transport") {
            guard let transport = TransportName.known(matching: name) ?? TransportName(name) else {
                throw invocation.usageError("--transport: '\(name)' is not a transport name")
            }
            transportFilter = transport
        }
        if let file = arguments.value("tor-options-file"), !FileManager.default.isReadableFile(atPath: file) {
            throw invocation.usageError("cannot read --tor-options-file '\(file)'")
        }
        var candidates = try selectCandidates()
        if let transportFilter { candidates = candidates.filter { $0.line.transport == transportFilter } }
        let storedPlugins: [TransportPlugin]
        do { storedPlugins = try invocation.bridgeStore().load().plugins } catch { throw CommandFailure(error.message) }
        let plugins = arguments.flag("via-plugins") ? storedPlugins.map { $0.replacingBuiltins() } : storedPlugins
        let registry = try Transports.registry(handshakeTimeout: timeout, plugins: plugins,
                                               stateLocation: invocation.paths.stateDirectory)
        if arguments.flag("builtin") {
            // Built-in bridges of a transport this build has no client for (meek_lite): one note
            // per transport at the start, not a skipped row per bridge.
            let lacking = Dictionary(grouping: candidates.filter { candidate in
                !candidate.line.transport.isVanilla
                    && registry.transport(named: candidate.line.transport) == nil
            }, by: { $0.line.transport.rawValue })
            for (transport, skipped) in lacking.sorted(by: { $0.key < $1.key }) {
                invocation.output.error("note: \(plural(skipped.count, "built-in \(transport) bridge")) not tested: this build has no \(transport) client")
            }
            candidates.removeAll { lacking[$0.line.transport.rawValue] != nil }
        }
        guard !candidates.isEmpty else {
            throw CommandFailure("no bridges to test (add some with 'postern bridges add', or test the built-in ones with --builtin)")
        }

        let bootstrap = arguments.flag("bootstrap")
        let torOptionsFile = arguments.value("tor-options-file")
        let unsafe = invocation.unsafeLogging
        let workDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-bridges-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(at: workDirectory) }
        let output = invocation.output
        let done = Mutex(0)
        let started = ContinuousClock.now

        let results: [BridgeHealth] = await withTaskGroup(of: (Int, BridgeHealth).self) { group in
            var next = 0
            var collected: [(Int, BridgeHealth)] = []
            func launch() {
                let position = next
                let candidate = candidates[position]
                next += 1
                group.addTask {
                    var health = await Self.check(candidate, registry: registry, timeout: timeout, policy: policy)
                    if bootstrap {
                        health.bootstrap = await Self.bootstrap(candidate, directory: workDirectory.appendingPathComponent(candidate.id),
                                                                plugins: plugins, timeout: bootstrapTimeout, torOptionsFile: torOptionsFile,
                                                                unsafeLogging: unsafe)
                        if health.bootstrap?.result == "failed", health.alive {
                            health.alive = false
                            health.reason = "bootstrap failed: \(health.bootstrap!.detail)"
                        }
                    }
                    return (position, health)
                }
            }
            while next < min(parallel, candidates.count) { launch() }
            while let result = await group.next() {
                collected.append(result)
                let count = done.withLock { $0 += 1; return $0 }
                output.progress("testing bridges: \(count)/\(candidates.count) done")
                if next < candidates.count { launch() }
            }
            return collected.sorted { $0.0 < $1.0 }.map(\.1)
        }
        output.endProgress()
        await Transports.stopPlugins()
        let elapsed = (ContinuousClock.now - started).seconds
        let dead = results.filter { !$0.alive }.count

        if invocation.json {
            struct Report: Encodable {
                let bridges: [BridgeHealth]; let alive: Int; let dead: Int; let seconds: Double; let scrubbed: Bool
            }
            try output.json(Report(bridges: results, alive: results.count - dead, dead: dead,
                                   seconds: (elapsed * 1000).rounded() / 1000, scrubbed: !policy.unsafeLogging))
        } else {
            func cell(_ step: BridgeHealth.Step?) -> String {
                guard let step else { return "-" }
                switch step.result {
                case "ok": return step.milliseconds.map { String(format: "ok %.0f ms", $0) } ?? "ok"
                case "skipped": return "skipped"
                default: return "FAILED"
                }
            }
            // webtunnel's TLS step gets a column of its own; its HANDSHAKE is the upgrade and the 101.
            let showsTLS = results.contains { $0.tls != nil }
            var header = ["ID", "TRANSPORT", "TCP"] + (showsTLS ? ["TLS"] : []) + ["HANDSHAKE"]
            if bootstrap { header.append("BOOTSTRAP") }
            header += ["STATUS", "BRIDGE"]
            let rows = results.map { health -> [String] in
                var row = [health.id, health.transport, cell(health.tcp)] + (showsTLS ? [cell(health.tls)] : []) + [cell(health.handshake)]
                if bootstrap { row.append(cell(health.bootstrap)) }
                row += [health.alive ? "alive" : "DEAD: \(health.reason ?? "?")", health.bridge]
                return row
            }
            output.print(Table.render(header: header, rows: rows))
            output.print("\(plural(results.count, "bridge")) tested in \(String(format: "%.1f", elapsed)) s: \(results.count - dead) alive, \(dead) dead")
        }
        return dead > 0 ? 1 : 0
    }

    private func number(_ name: String, default value: Double, range: ClosedRange<Double>) throws -> Double {
        guard let text = invocation.arguments.value(name) else { return value }
        guard let number = Double(text), range.contains(number) else {
            throw invocation.usageError("--\(name) must be a number from \(range.lowerBound.formatted()) to \(range.upperBound.formatted()), not '\(text)'")
        }
        return number
    }

    private func number(_ name: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
        guard let text = invocation.arguments.value(name) else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw invocation.usageError("--\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return number
    }

    private func selectCandidates() throws -> [Candidate] {
        let arguments = invocation.arguments
        if arguments.flag("builtin") {
            guard arguments.positionals.isEmpty, !arguments.flag("all") else {
                throw invocation.usageError("--builtin tests the built-in bridges: give no IDs and no --all with it")
            }
            let builtins = try BuiltinBridges.bundled()
            var candidates: [Candidate] = []
            for transport in builtins.transports.sorted() {
                for (index, line) in builtins.lines(for: transport).enumerated() {
                    candidates.append(Candidate(id: "builtin-\(transport.rawValue)-\(index + 1)", line: line))
                }
            }
            return candidates
        }
        let configuration: BridgeConfiguration
        do { configuration = try invocation.bridgeStore().load() } catch { throw CommandFailure(error.message) }
        if !arguments.positionals.isEmpty {
            guard !arguments.flag("all") else { throw invocation.usageError("give bridge IDs or --all, not both") }
            return try invocation.bridgeIDs().map { id in
                guard let bridge = configuration.bridge(id) else {
                    throw CommandFailure("there is no bridge with the ID \(id) (see 'postern bridges list')")
                }
                return Candidate(id: id.rawValue, line: bridge.line)
            }
        }
        let bridges = arguments.flag("all") ? configuration.bridges : configuration.bridges.filter(\.isEnabled)
        return bridges.map { Candidate(id: $0.id.rawValue, line: $0.line) }
    }

    /// TCP and transport handshake.
    static func check(_ candidate: Candidate, registry: TransportRegistry, timeout: Duration,
                      policy: LoggingPolicy) async -> BridgeHealth {
        let line = candidate.line
        var health = BridgeHealth(id: candidate.id, transport: line.transport.rawValue, bridge: line.description(policy: policy),
                                  tcp: .init(result: "skipped", detail: ""), handshake: .init(result: "skipped", detail: ""),
                                  alive: true)
        if line.transport.rawValue == "webtunnel",
           let transport = registry.transport(named: WebtunnelTransport.transportName) as? WebtunnelTransport {
            return await checkWebtunnel(line, transport: transport, health: health, timeout: timeout)
        }
        let endpoint = try? TransportEndpoint(parsing: line.address.description)
        let isSnowflake = line.transport.rawValue == "snowflake"
        if isSnowflake {
            // The address in a snowflake line is a placeholder: clients reach it only through proxies.
            health.tcp = .init(result: "skipped", detail: "snowflake is reached through proxies, not its address")
        } else if let endpoint {
            let started = ContinuousClock.now
            do {
                let socket = try await TCPSocket.connect(to: endpoint, timeout: timeout)
                socket.close()
                health.tcp = .init(result: "ok", milliseconds: Self.milliseconds(since: started), detail: "connected")
            } catch {
                health.tcp = .init(result: "failed", milliseconds: Self.milliseconds(since: started), detail: Self.describe(error))
                health.alive = false
                health.reason = Self.tcpReason(error)
                return health
            }
        } else {
            health.tcp = .init(result: "skipped", detail: "a host name, not an address: not resolved here (it would leak)")
        }

        guard !line.transport.isVanilla else {
            health.handshake = .init(result: "skipped", detail: "vanilla: no transport handshake (see --bootstrap)")
            return health
        }
        guard let transport = registry.transport(named: line.transport) else {
            health.handshake = .init(result: "skipped", detail: "the \(line.transport.rawValue) transport is not available in this build")
            return health
        }
        guard let endpoint = endpoint ?? (isSnowflake ? try? TransportEndpoint(parsing: "192.0.2.3:80") : nil) else {
            health.handshake = .init(result: "skipped", detail: "no address to dial")
            return health
        }
        let pairs = line.arguments.map { TransportArguments.Pair(key: $0.key, value: $0.value) }
        let dial: PreparedDial
        do {
            dial = try transport.prepareDial(arguments: TransportArguments(pairs))
        } catch {
            health.handshake = .init(result: "failed", detail: error.message)
            health.alive = false
            health.reason = "its arguments are invalid: \(error.message)"
            return health
        }
        let started = ContinuousClock.now
        do {
            // Snowflake's dial has its own patience (broker, proxy); bound it as a whole.
            let limit = isSnowflake ? timeout * 3 : timeout * 2
            let connection = try await Self.bounded(limit) { try await dial.dial(endpoint, context: DialContext()) }
            connection.close()
            let what: String
            if let external = transport as? ExternalTransport {
                what = "SOCKS dial through \(external.client.definition.label) to the bridge succeeded"
            } else {
                what = isSnowflake ? "broker answered, data channel open" : "handshake completed (alive, cert right)"
            }
            health.handshake = .init(result: "ok", milliseconds: Self.milliseconds(since: started), detail: what)
        } catch {
            health.handshake = .init(result: "failed", milliseconds: Self.milliseconds(since: started), detail: Self.describe(error))
            health.alive = false
            health.reason = Self.handshakeReason(error, transport: line.transport.rawValue)
        }
        return health
    }

    /// webtunnel: the line's address is synthetic and never dialled. TCP to the url host (resolved
    /// by the system resolver, as every use of the bridge does), TLS, the upgrade request, the 101.
    static func checkWebtunnel(_ line: BridgeLine, transport: WebtunnelTransport, health initial: BridgeHealth,
                               timeout: Duration) async -> BridgeHealth {
        var health = initial
        let pairs = line.arguments.map { TransportArguments.Pair(key: $0.key, value: $0.value) }
        let options: WebtunnelOptions
        do {
            options = try transport.configuration(from: TransportArguments(pairs))
        } catch {
            health.handshake = .init(result: "failed", detail: error.message)
            health.alive = false
            health.reason = "its arguments are invalid: \(error.message)"
            return health
        }
        let https = options.scheme == .https
        /// When each stage was reached, in milliseconds since the start.
        let reached = Mutex<[WebtunnelTransport.Stage: Double]>([:])
        let started = ContinuousClock.now
        var failure: (any Error)?
        do {
            let connection = try await bounded(timeout * 3) {
                try await transport.probe(options, context: DialContext()) { stage in
                    let at = milliseconds(since: started)
                    reached.withLock { $0[stage] = at }
                }
            }
            connection.close()
        } catch {
            failure = error
        }
        let times = reached.withLock { $0 }
        let failedAt = milliseconds(since: started)
        let detail = failure.map(describe) ?? ""
        func step(_ stage: WebtunnelTransport.Stage, since previous: WebtunnelTransport.Stage?, ok: String) -> BridgeHealth.Step {
            if let at = times[stage] {
                return .init(result: "ok", milliseconds: at - (previous.flatMap { times[$0] } ?? 0), detail: ok)
            }
            let previousReached = previous.map { times[$0] != nil } ?? true
            guard previousReached, failure != nil else { return .init(result: "skipped", detail: "an earlier step failed") }
            return .init(result: "failed", milliseconds: failedAt - (previous.flatMap { times[$0] } ?? 0), detail: detail)
        }
        health.tcp = step(.tcp, since: nil, ok: "url host resolved by the system resolver and connected")
        health.tls = https ? step(.tls, since: .tcp, ok: "certificate verified for the server name")
                           : .init(result: "skipped", detail: "http url: no TLS")
        let sent: WebtunnelTransport.Stage = https ? .tls : .tcp
        let answered = step(.switched, since: sent, ok: "101 Switching Protocols, Upgrade: websocket, Connection: upgrade")
        health.upgrade = answered
        health.handshake = answered
        if let failure {
            health.alive = false
            if times[.tcp] == nil {
                health.reason = times[.resolve] == nil ? "the url host did not resolve: \(describe(failure))" : tcpReason(failure)
            } else if https && times[.tls] == nil {
                health.reason = "TLS failed: \(describe(failure))"
            } else {
                health.reason = "upgrade refused: \(describe(failure))"
            }
        }
        return health
    }

    /// A real bootstrap through this bridge alone, in a child `postern run`.
    static func bootstrap(_ candidate: Candidate, directory: URL, plugins: [TransportPlugin], timeout: Duration, torOptionsFile: String?,
                          unsafeLogging: Bool) async -> BridgeHealth.Step {
        let started = ContinuousClock.now
        let child: ChildRun
        do {
            child = try ChildRun(.init(directory: directory, transport: candidate.line.transport.rawValue, bridges: [candidate.line],
                                       plugins: plugins.filter { $0.names.contains(candidate.line.transport) },
                                       socksPort: try ChildRun.freePort(), torOptionsFile: torOptionsFile,
                                       unsafeLogging: unsafeLogging, warmFrom: nil))
        } catch {
            return .init(result: "failed", detail: "could not start the child: \(error)")
        }
        let outcome = await child.waitForReady(timeout: timeout)
        let events = child.events
        await child.stop()
        child.cleanUp()
        switch outcome {
        case .ready:
            return .init(result: "ok", milliseconds: (events.first { $0.event == "ready" }?.t ?? 0) * 1000, detail: "100%")
        case .failed(let reason):
            return .init(result: "failed", milliseconds: Self.milliseconds(since: started),
                         detail: TrialRunner.failure(events: events, reason: reason).describedPlace)
        case .timedOut:
            return .init(result: "failed", milliseconds: Self.milliseconds(since: started),
                         detail: TrialRunner.failure(events: events, reason: "no 100% within \(timeout.seconds.formatted()) s").describedPlace)
        }
    }

    static func bounded<T: Sendable>(_ limit: Duration, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await operation() }
            group.addTask { try await Task.sleep(for: limit); return nil }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else {
                throw TransportError(code: .timedOut, kind: .timeout, message: "no answer within \(limit.seconds.formatted()) s")
            }
            return value
        }
    }

    static func milliseconds(since start: ContinuousClock.Instant) -> Double {
        ((ContinuousClock.now - start).seconds * 10000).rounded() / 10
    }

    static func describe(_ error: any Error) -> String {
        (error as? TransportError)?.description ?? "\(error)"
    }

    static func tcpReason(_ error: any Error) -> String {
        guard let error = error as? TransportError else { return "unreachable: \(error)" }
        switch error.code {
        case .connectionRefused: return "refused (nothing listens there)"
        case .timedOut: return "timeout (no answer: down or blocked)"
        case .networkUnreachable, .hostUnreachable: return "unreachable (\(error.message))"
        default: return "unreachable (\(error.message))"
        }
    }

    static func handshakeReason(_ error: any Error, transport: String) -> String {
        guard let error = error as? TransportError else { return "handshake failed: \(error)" }
        if transport == "obfs4" {
            switch error.code.rawValue {
            case "obfs4-handshake-timeout", "timed-out":
                return "handshake failed: no valid reply in time (wrong cert? an obfs4 bridge stays silent to a client with the wrong one)"
            case "obfs4-server-closed-during-handshake":
                return "handshake failed: the server closed the connection (wrong cert, or not an obfs4 bridge)"
            case "obfs4-server-mac-mismatch", "obfs4-server-mark-not-found", "obfs4-ntor-auth-mismatch":
                return "handshake failed: the reply does not match the cert (wrong cert or fingerprint)"
            case "connection-refused":
                return "refused (nothing listens there)"
            default: break
            }
        }
        if error.code == .connectionRefused { return "refused (nothing listens there)" }
        if error.kind == .timeout { return "\(transport): timeout (\(error.message))" }
        return "\(transport) handshake failed: \(error.message)"
    }
}

extension ABResult.Failure {
    /// "stalled at 5% (conn): reason".
    var describedPlace: String {
        guard let progress else { return reason }
        return "stalled at \(progress)% (\(tag ?? "")): \(reason)"
    }
}
