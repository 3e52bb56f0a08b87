import BridgeConfig
import ConnectionAssist
import Foundation
import PosternLinkSpec
import DnsttTransport
import Synchronization
import TransportBase
import TransportWire
import WebtunnelTransport

/// The outcome of testing one bridge.
public struct BridgeHealth: Codable, Sendable {
    /// One step of the test (TCP, TLS, upgrade, handshake, bootstrap) and how it went.
    public struct Step: Codable, Sendable {
        /// How a step went: passed, failed, or not run (an earlier step failed, or the transport has none).
        public enum Result: String, Codable, Sendable {
            /// The step passed.
            case ok
            /// The step failed; ``BridgeHealth/Step/detail`` says how.
            case failed
            /// The step was not run (an earlier one failed, or the transport has no such step).
            case skipped
        }
        /// How the step went.
        public var result: Result
        /// How long the step took; nil when it was not run.
        public var milliseconds: Double?
        /// What was seen, in words (scrubbed: names no bridge).
        public var detail: String

        /// A step that went `result` in `milliseconds`, with `detail`.
        public init(result: Result, milliseconds: Double? = nil, detail: String) {
            self.result = result
            self.milliseconds = milliseconds
            self.detail = detail
        }
    }

    /// Store ID, or "builtin-<transport>-<n>" for a built-in bridge.
    public var id: String
    /// The bridge's transport name ("vanilla" for plain bridges).
    public var transport: String
    /// Scrubbed unless --unsafe-logging.
    public var bridge: String
    /// The TCP connect to the bridge's address (webtunnel: the url's host).
    public var tcp: Step
    /// webtunnel only: the TLS handshake with the web server (certificate and servername checked).
    public var tls: Step?
    /// webtunnel only: the upgrade request on the secret path and the server's answer.
    public var upgrade: Step?
    /// dnstt only: the resolver reached (udp: a DNS answer came back; dot, doh: TLS with the
    /// resolver verified and a DNS answer came back).
    public var resolver: Step?
    /// The transport's own handshake (obfs4: the server's reply verified with the cert; dnstt: the
    /// Noise handshake).
    public var handshake: Step
    /// dnstt only: the stream's opening acknowledged by the server.
    public var stream: Step?
    /// A bootstrap through this bridge alone, when the caller asked for one.
    public var bootstrap: Step?
    /// The deep check (`--deep`: a transfer through this bridge alone, long enough to see a
    /// freeze), when the caller asked for one: passed (a slow transfer too), or failed.
    public var deep: Step?
    /// The deep check's figures, when it ran.
    public var transfer: Transfer?
    /// True when every step that ran passed.
    public var alive: Bool
    /// Why the bridge is flagged, in words; nil when alive.
    public var reason: String?
}

/// `postern bridges test` as a library: TCP, the transport's handshake (webtunnel: TLS and the
/// upgrade), and optionally a bootstrap the caller supplies, for many bridges in parallel.
public struct BridgeHealthCheck: Sendable {
    /// One bridge to test, with the name the report gives it.
    public struct Candidate: Sendable {
        /// Store ID, or "builtin-<transport>-<n>" for a built-in bridge.
        public var id: String
        /// The bridge line (never shown unless the policy is unsafe).
        public var line: BridgeLine
        /// A candidate named `id` for `line`.
        public init(id: String, line: BridgeLine) {
            self.id = id
            self.line = line
        }
    }

    /// Transports with their waits shortened (``Transports/registry(handshakeTimeout:plugins:stateLocation:)``).
    public var registry: TransportRegistry
    /// The limit for the TCP connect and for the handshake, each.
    public var timeout: Duration
    /// Bridges tested at once.
    public var parallel: Int
    /// Whether bridge lines are scrubbed from the results (`.safe`) or shown (`--unsafe-logging`).
    public var policy: LoggingPolicy

    /// A check with `registry`'s transports, `timeout` for each step, `parallel` bridges at once (at least one).
    public init(registry: TransportRegistry, timeout: Duration, parallel: Int = 10, policy: LoggingPolicy = .safe) {
        self.registry = registry
        self.timeout = timeout
        self.parallel = max(1, parallel)
        self.policy = policy
    }

    /// The built-in bridges, named "builtin-<transport>-<n>", transports in name order.
    public static func candidates(builtins: BuiltinBridges) -> [Candidate] {
        builtins.transports.sorted().flatMap { transport in
            builtins.lines(for: transport).enumerated().map { Candidate(id: "builtin-\(transport.rawValue)-\($0.offset + 1)", line: $0.element) }
        }
    }

    /// Stored bridges by store ID: the enabled ones (all with `includeDisabled`), or exactly `ids`
    /// in their order (unknown IDs are left out: check them first).
    public static func candidates(_ configuration: BridgeConfiguration, ids: [BridgeID]? = nil,
                                  includeDisabled: Bool = false) -> [Candidate] {
        if let ids {
            return ids.compactMap { id in configuration.bridge(id).map { Candidate(id: id.rawValue, line: $0.line) } }
        }
        let bridges = includeDisabled ? configuration.bridges : configuration.bridges.filter(\.isEnabled)
        return bridges.map { Candidate(id: $0.id.rawValue, line: $0.line) }
    }

    /// Whether this build has a client for the line's transport (vanilla needs none).
    public func canTest(_ line: BridgeLine) -> Bool {
        line.transport.isVanilla || TransportBase.TransportName(line.transport.rawValue).flatMap { registry.transport(named: $0) } != nil
    }

    /// Tests every candidate, `parallel` at a time, in the candidates' order. `bootstrap`, when
    /// given, runs after a check and a failed bootstrap makes an alive bridge dead; `progress`
    /// gets the number done after each.
    /// `deep`, when given, runs last, on bridges still alive: a freeze or a failed transfer makes
    /// the bridge dead, a slow one leaves it alive with the figure.
    public func run(_ candidates: [Candidate], bootstrap: (@Sendable (Candidate) async -> BridgeHealth.Step)? = nil,
                    deep: (@Sendable (Candidate) async -> BridgeHealth.Transfer)? = nil,
                    progress: @escaping @Sendable (Int) -> Void = { _ in }) async -> [BridgeHealth] {
        let done = Mutex(0)
        return await withTaskGroup(of: (Int, BridgeHealth).self) { group in
            var next = 0
            var collected: [(Int, BridgeHealth)] = []
            func launch() {
                let position = next
                let candidate = candidates[position]
                next += 1
                group.addTask {
                    var health = await Self.check(candidate, registry: registry, timeout: timeout, policy: policy)
                    if let bootstrap {
                        let step = await bootstrap(candidate)
                        health.bootstrap = step
                        if step.result == .failed, health.alive {
                            health.alive = false
                            health.reason = "bootstrap failed: \(step.detail)"
                        }
                    }
                    if let deep {
                        if health.alive {
                            let transfer = await deep(candidate)
                            health.transfer = transfer
                            health.deep = transfer.step
                            if transfer.step.result == .failed {
                                health.alive = false
                                health.reason = "deep: \(transfer.detail)"
                            }
                        } else {
                            health.deep = .init(result: .skipped, detail: "an earlier step failed")
                        }
                    }
                    return (position, health)
                }
            }
            while next < min(parallel, candidates.count) { launch() }
            while let result = await group.next() {
                collected.append(result)
                progress(done.withLock { $0 += 1; return $0 })
                if next < candidates.count { launch() }
            }
            return collected.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    /// TCP and transport handshake.
    public static func check(_ candidate: Candidate, registry: TransportRegistry, timeout: Duration,
                      policy: LoggingPolicy) async -> BridgeHealth {
        let line = candidate.line
        var health = BridgeHealth(id: candidate.id, transport: line.transport.rawValue, bridge: line.description(policy: policy),
                                  tcp: .init(result: .skipped, detail: ""), handshake: .init(result: .skipped, detail: ""),
                                  alive: true)
        if line.transport.rawValue == "webtunnel",
           let transport = registry.transport(named: WebtunnelTransport.transportName) as? WebtunnelTransport {
            return await checkWebtunnel(line, transport: transport, health: health, timeout: timeout)
        }
        if line.transport.rawValue == "dnstt",
           let transport = registry.transport(named: DnsttTransport.transportName) as? DnsttTransport {
            return await checkDnstt(line, transport: transport, health: health, timeout: timeout)
        }
        let endpoint = try? TransportEndpoint(parsing: line.address.description)
        let isSnowflake = line.transport.rawValue == "snowflake"
        if isSnowflake {
            // The address in a snowflake line is a placeholder: clients reach it only through proxies.
            health.tcp = .init(result: .skipped, detail: "snowflake is reached through proxies, not its address")
        } else if let endpoint {
            let started = ContinuousClock.now
            do {
                let socket = try await TCPSocket.connect(to: endpoint, timeout: timeout)
                socket.close()
                health.tcp = .init(result: .ok, milliseconds: Self.milliseconds(since: started), detail: "connected")
            } catch {
                health.tcp = .init(result: .failed, milliseconds: Self.milliseconds(since: started), detail: Self.describe(error))
                health.alive = false
                health.reason = Self.tcpReason(error)
                return health
            }
        } else {
            health.tcp = .init(result: .skipped, detail: "a host name, not an address: not resolved here (it would leak)")
        }

        guard !line.transport.isVanilla else {
            health.handshake = .init(result: .skipped, detail: "vanilla: no transport handshake (see --bootstrap)")
            return health
        }
        guard let transport = registry.transport(named: TransportBase.TransportName(line.transport.rawValue)!) else {
            health.handshake = .init(result: .skipped, detail: "the \(line.transport.rawValue) transport is not available in this build")
            return health
        }
        guard let endpoint = endpoint ?? (isSnowflake ? try? TransportEndpoint(parsing: "192.0.2.3:80") : nil) else {
            health.handshake = .init(result: .skipped, detail: "no address to dial")
            return health
        }
        let pairs = line.arguments.map { TransportArguments.Pair(key: $0.key, value: $0.value) }
        let dial: PreparedDial
        do {
            dial = try transport.prepareDial(arguments: TransportArguments(pairs))
        } catch {
            health.handshake = .init(result: .failed, detail: error.message)
            health.alive = false
            health.reason = "its arguments are invalid: \(error.message)"
            return health
        }
        let started = ContinuousClock.now
        do {
            // Snowflake's dial has its own patience (broker, proxy); bound it as a whole.
            let limit = isSnowflake ? timeout * 3 : timeout * 2
            let connection = try await withDeadline(limit, timedOut: { TransportError.noAnswer(within: limit) }) { try await dial.dial(endpoint, context: DialContext()) }
            connection.close()
            let what: String
            if let external = transport as? ExternalTransport {
                what = "SOCKS dial through \(external.client.definition.label) to the bridge succeeded"
            } else {
                what = isSnowflake ? "broker answered, data channel open" : "handshake completed (alive, cert right)"
            }
            health.handshake = .init(result: .ok, milliseconds: Self.milliseconds(since: started), detail: what)
        } catch {
            health.handshake = .init(result: .failed, milliseconds: Self.milliseconds(since: started), detail: Self.describe(error))
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
            health.handshake = .init(result: .failed, detail: error.message)
            health.alive = false
            health.reason = "its arguments are invalid: \(error.message)"
            return health
        }
        let https = options.scheme == .https
        let probe = await StagedProbe<WebtunnelTransport.Stage>.run(limit: timeout * 3) { stageReached in
            try await transport.probe(options, context: DialContext(), stageReached: stageReached)
        }
        let (times, failure, failedAt) = (probe.reached, probe.failure, probe.ended)
        let detail = failure.map(describe) ?? ""
        func step(_ stage: WebtunnelTransport.Stage, since previous: WebtunnelTransport.Stage?, ok: String) -> BridgeHealth.Step {
            if let at = times[stage] {
                return .init(result: .ok, milliseconds: at - (previous.flatMap { times[$0] } ?? 0), detail: ok)
            }
            let previousReached = previous.map { times[$0] != nil } ?? true
            guard previousReached, failure != nil else { return .init(result: .skipped, detail: "an earlier step failed") }
            return .init(result: .failed, milliseconds: failedAt - (previous.flatMap { times[$0] } ?? 0), detail: detail)
        }
        health.tcp = step(.tcp, since: nil, ok: "url host resolved by the system resolver and connected")
        health.tls = https ? step(.tls, since: .tcp, ok: "certificate verified for the server name")
                           : .init(result: .skipped, detail: "http url: no TLS")
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

    /// The time since `start` in milliseconds, to a tenth (as the steps report it).
    public static func milliseconds(since start: ContinuousClock.Instant) -> Double {
        ((ContinuousClock.now - start).seconds * 10000).rounded() / 10
    }

    static func describe(_ error: any Error) -> String {
        (error as? TransportError)?.description ?? "\(error)"
    }

    /// What a refused connection shows, and no more: a closed port and a censor's forged refusal
    /// look the same from here (issue #22).
    static let refusedReason = "refused: the connection was refused (a closed port, or a censor)"

    static func tcpReason(_ error: any Error) -> String {
        guard let error = error as? TransportError else { return "unreachable: \(error)" }
        switch error.code {
        case .connectionRefused: return Self.refusedReason
        case .timedOut: return "no answer: the connection timed out (the bridge is down, or the path drops it)"
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
                return Self.refusedReason
            default: break
            }
        }
        if error.code == .connectionRefused { return Self.refusedReason }
        if error.kind == .timeout { return "\(transport): timeout (\(error.message))" }
        return "\(transport) handshake failed: \(error.message)"
    }
}
