import Foundation
import Obfs4Transport
import PosternTor
import SnowflakeTransport
import TransportBase
import TransportWire

/// Connection assist's probes (race strategy): while tor tries one route, each other route is
/// checked on its own addresses only, bounded in time, so that assist knows which ones answer.
///
/// - direct: TCP to a few of tor's directory authorities (or fallback directories) from tor's
///   own configured list (`DirAuthority`, `AlternateDirAuthority`, `FallbackDir` in the run's tor
///   options; tor's default authorities otherwise);
/// - vanilla bridges: TCP to a few of the route's bridges;
/// - obfs4 and any other transport this build has a client for: the transport's own dial
///   (obfs4: TCP and the obfs4 handshake, so the bridge is alive and its cert right);
/// - snowflake: the broker rendezvous and a data channel to a proxy (DNS only if the broker
///   front is a name, as the route itself needs).
///
/// No app traffic, no other address. Not done (yet): TLS and tor's link handshake (VERSIONS
/// cell) on direct and vanilla probes; TCP alone cannot see a censor that resets TLS, which
/// tor's ORCONN failures then show.
package struct AssistProbes: Sendable {
    /// The limit for a TCP connect (direct, vanilla) and for a transport's handshake.
    var connectTimeout: Duration = .seconds(3)
    /// How probes connect; the session makes it report to its ledger as probes.
    package var dialer: OutboundDialer = .direct
    /// The limit for a snowflake rendezvous and data channel, as a whole.
    var snowflakeTimeout: Duration = .seconds(20)
    /// Peers probed at once per route.
    var peersPerRoute = 3
    let registry: TransportRegistry
    /// The directory endpoints of the run's tor (address:ORPort).
    let directEndpoints: [TransportEndpoint]

    package init(torOptions: [TorOption]) throws {
        // No retry with an old-style key for obfs4: one attempt says enough, and a retry would
        // double the time a silently dropped bridge takes to fail.
        registry = try TransportRegistry([Obfs4Transport(connectTimeout: .seconds(3), handshakeTimeout: .seconds(3), retryForOldBridges: false),
                                          SnowflakeTransport(proxyPatience: .seconds(6), waitsForDataChannel: true)])
        directEndpoints = Self.directoryEndpoints(torOptions)
    }

    /// tor's default directory authorities (src/app/config/auth_dirs.inc of the linked tor):
    /// address and ORPort, used when the run sets no authorities of its own.
    static let defaultAuthorities = ["128.31.0.39:9201", "217.196.147.77:443", "45.66.35.11:443", "131.188.40.189:443",
                                     "193.23.244.244:443", "171.25.193.9:80", "199.58.81.140:443"]

    /// `DirAuthority nick [flags] orport=N ... ADDR:DIRPORT FP...` and `FallbackDir ADDR:DIRPORT
    /// orport=N id=FP ...` to ADDR:ORPORT; tor's default authorities when none is configured.
    static func directoryEndpoints(_ options: [TorOption]) -> [TransportEndpoint] {
        var endpoints: [TransportEndpoint] = []
        for option in options where ["DirAuthority", "AlternateDirAuthority", "FallbackDir"].contains(option.key) {
            let words = option.value.split(separator: " ").map(String.init)
            guard let orPort = words.first(where: { $0.hasPrefix("orport=") }).flatMap({ UInt16($0.dropFirst("orport=".count)) }),
                  let address = words.first(where: { $0.contains(":") && !$0.contains("=") && !$0.hasPrefix("[") }),
                  let host = address.split(separator: ":").first,
                  let endpoint = try? TransportEndpoint(parsing: "\(host):\(orPort)") else { continue }
            if !endpoints.contains(endpoint) { endpoints.append(endpoint) }
        }
        if endpoints.isEmpty {
            endpoints = defaultAuthorities.compactMap { try? TransportEndpoint(parsing: $0) }.shuffled()
        }
        return endpoints
    }

    package func probe(_ route: AssistRoute) async -> ProbeResult {
        let started = ContinuousClock.now
        guard let transport = route.transport else {
            return await tcp(Array(directEndpoints.prefix(peersPerRoute)), started: started)
        }
        if transport.isVanilla {
            let endpoints = route.bridges.compactMap { try? TransportEndpoint(parsing: $0.address.description) }
            return await tcp(Array(endpoints.prefix(peersPerRoute)), started: started)
        }
        guard let client = registry.transport(named: transport) else {
            return ProbeResult(outcome: .skipped, milliseconds: 0, steps: [], peersTried: 0, peersAnswered: 0)
        }
        let isSnowflake = transport == .snowflake
        // The address of a snowflake line is a placeholder: one rendezvous says enough.
        let bridges = Array(route.bridges.prefix(isSnowflake ? 1 : peersPerRoute))
        let stepName = isSnowflake ? "snowflake-rendezvous+data-channel" : "\(transport.rawValue)-handshake"
        let limit = isSnowflake ? snowflakeTimeout : connectTimeout + .seconds(1)
        let outcomes = await withTaskGroup(of: (Bool, ConnectionProblem?).self) { group in
            for bridge in bridges {
                group.addTask {
                    guard let endpoint = try? TransportEndpoint(parsing: bridge.address.description) else { return (false, .other) }
                    let pairs = bridge.arguments.map { TransportArguments.Pair(key: $0.key, value: $0.value) }
                    do {
                        let dial = try client.prepareDial(arguments: TransportArguments(pairs))
                        let connection = try await withDeadline(limit, timedOut: { TransportError.noAnswer(within: limit) }) { try await dial.dial(endpoint, context: DialContext(dialer: dialer)) }
                        connection.close()
                        return (true, nil)
                    } catch {
                        return (false, Self.problem(error))
                    }
                }
            }
            return await Self.firstSuccess(group)
        }
        return result(outcomes, steps: [stepName], peers: bridges.count, started: started)
    }

    private func tcp(_ endpoints: [TransportEndpoint], started: ContinuousClock.Instant) async -> ProbeResult {
        guard !endpoints.isEmpty else {
            return ProbeResult(outcome: .skipped, milliseconds: 0, steps: [], peersTried: 0, peersAnswered: 0)
        }
        let timeout = connectTimeout
        let outcomes = await withTaskGroup(of: (Bool, ConnectionProblem?).self) { [dialer] group in
            for endpoint in endpoints {
                group.addTask {
                    do {
                        let socket = try await dialer.connect(to: endpoint, timeout: timeout)
                        socket.close()
                        return (true, nil)
                    } catch {
                        return (false, Self.problem(error))
                    }
                }
            }
            return await Self.firstSuccess(group)
        }
        return result(outcomes, steps: ["tcp"], peers: endpoints.count, started: started)
    }

    /// Returns as soon as one peer answered (the rest are cancelled), or every outcome.
    private static func firstSuccess(_ group: TaskGroup<(Bool, ConnectionProblem?)>) async -> [(Bool, ConnectionProblem?)] {
        var group = group
        var outcomes: [(Bool, ConnectionProblem?)] = []
        while let outcome = await group.next() {
            outcomes.append(outcome)
            if outcome.0 {
                group.cancelAll()
                break
            }
        }
        return outcomes
    }

    private func result(_ outcomes: [(Bool, ConnectionProblem?)], steps: [String], peers: Int,
                        started: ContinuousClock.Instant) -> ProbeResult {
        let milliseconds = ((ContinuousClock.now - started).seconds * 10_000).rounded() / 10
        let answered = outcomes.filter(\.0).count
        let problems = outcomes.compactMap(\.1)
        let main = Dictionary(grouping: problems, by: { $0 }).max { $0.value.count < $1.value.count }?.key
        let outcome: ProbeResult.Outcome = answered > 0 ? .passed : .failed
        return ProbeResult(outcome: outcome, milliseconds: milliseconds,
                           steps: steps.map { .init(name: $0, outcome: outcome, milliseconds: milliseconds, problem: answered > 0 ? nil : main) },
                           peersTried: peers, peersAnswered: answered, problem: answered > 0 ? nil : (main ?? .other))
    }

    static func problem(_ error: any Error) -> ConnectionProblem {
        guard let error = error as? TransportError else { return .other }
        return ConnectionProblem(transportCode: error.code.rawValue, kind: error.kind.rawValue)
    }
}
