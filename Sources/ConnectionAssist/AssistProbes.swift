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
///
/// Footprint (docs/plans/CENSOR-AWARE-ASSIST.md §3): a route's peers are probed one after another,
/// ``peerSpacing`` apart, and the probe stops at the first that answers, so a route never opens
/// parallel connections to one ip:port and a censor sees at most one probe connection per peer.
/// Every connection goes through `dialer` (the process's ``EndpointGate``: a token bucket per
/// ip:port, one probe per ip:port, none while tor's own dial to it is open); a peer the gate held
/// back is no evidence, and a probe whose every peer was held back is `skipped`.
package struct AssistProbes: Sendable {
    /// The limit for a TCP connect (direct, vanilla) and for a transport's handshake.
    var connectTimeout: Duration = .seconds(3)
    /// The obfs4 handshake's own limit (after the connect).
    var handshakeTimeout: Duration = .seconds(3)
    /// The pause between two peers of one route.
    var peerSpacing: Duration = .milliseconds(300)
    /// How probes connect: through the process's gate, as probes.
    /// The session makes it report to its ledger as probes (``FlowLedger``), gate kept.
    package var dialer: OutboundDialer = OutboundDialer.direct.labelled(as: .probe)
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
        // Past the connect and the handshake's own limits (and the gate's wait of at most 1 s), so
        // that a handshake timeout is seen as one, not as this outer deadline.
        let limit = isSnowflake ? snowflakeTimeout : connectTimeout + handshakeTimeout + .seconds(2)
        let context = DialContext(dialer: dialer)
        var confirmation: CensorReader.Confirmation?
        let outcomes = await oneAfterAnother(bridges) { bridge in
            guard let endpoint = try? TransportEndpoint(parsing: bridge.address.description) else { return (false, .other) }
            let pairs = bridge.arguments.map { TransportArguments.Pair(key: $0.key, value: $0.value) }
            do {
                let dial = try client.prepareDial(arguments: TransportArguments(pairs))
                let connection = try await withDeadline(limit, timedOut: { TransportError.noAnswer(within: limit) }) { try await dial.dial(endpoint, context: context) }
                connection.close()
                return (true, nil)
            } catch {
                let problem = Self.problem(error)
                // A reset during the handshake (the connect had succeeded): does the address
                // still answer? One SYN-only connect, the first such reset of the probe only.
                if problem == .reset, !isSnowflake, confirmation == nil { confirmation = await confirm(endpoint) }
                return (false, problem)
            }
        }
        var probed = result(outcomes, steps: [stepName], peers: bridges.count, started: started)
        probed.confirmation = confirmation
        return probed
    }

    /// A SYN-only confirm connect to `endpoint` (connect, then close without sending a byte: a
    /// censor that judges first packets has nothing to judge): ``ConfirmConnect``'s answer (a
    /// silent address is paused in the gate); nil when the gate held it back.
    func confirm(_ endpoint: TransportEndpoint) async -> CensorReader.Confirmation? {
        await ConfirmConnect(dialer: OutboundDialer.direct.gated(by: dialer.gate).labelled(as: .confirm), timeout: connectTimeout)(endpoint)
    }

    /// Probes `peers` in order, ``peerSpacing`` apart, until one answers; the outcomes of those
    /// tried. Cancellation stops it between peers.
    private func oneAfterAnother<Peer: Sendable>(_ peers: [Peer], _ probe: (Peer) async -> (Bool, ConnectionProblem?)) async -> [(Bool, ConnectionProblem?)] {
        var outcomes: [(Bool, ConnectionProblem?)] = []
        for (index, peer) in peers.enumerated() {
            if index > 0 {
                guard (try? await Task.sleep(for: peerSpacing)) != nil else { break }
            }
            guard !Task.isCancelled else { break }
            let outcome = await probe(peer)
            outcomes.append(outcome)
            if outcome.0 { break }
        }
        return outcomes
    }

    private func tcp(_ endpoints: [TransportEndpoint], started: ContinuousClock.Instant) async -> ProbeResult {
        guard !endpoints.isEmpty else {
            return ProbeResult(outcome: .skipped, milliseconds: 0, steps: [], peersTried: 0, peersAnswered: 0)
        }
        let timeout = connectTimeout
        let outcomes = await oneAfterAnother(endpoints) { [dialer] endpoint in
            do {
                let socket = try await dialer.connect(to: endpoint, timeout: timeout)
                socket.close()
                return (true, nil)
            } catch {
                return (false, Self.problem(error))
            }
        }
        return result(outcomes, steps: ["tcp"], peers: endpoints.count, started: started)
    }

    private func result(_ outcomes: [(Bool, ConnectionProblem?)], steps: [String], peers: Int,
                        started: ContinuousClock.Instant) -> ProbeResult {
        let milliseconds = ((ContinuousClock.now - started).seconds * 10_000).rounded() / 10
        let answered = outcomes.filter(\.0).count
        // Peers Postern's own gate held back were not probed: no evidence either way.
        if answered == 0, !outcomes.isEmpty, outcomes.allSatisfy({ $0.1 == .heldBack }) {
            return ProbeResult(outcome: .skipped, milliseconds: milliseconds, steps: [], peersTried: 0, peersAnswered: 0)
        }
        let problems = outcomes.compactMap(\.1).filter { $0 != .heldBack }
        let main = Dictionary(grouping: problems, by: { $0 }).max { $0.value.count < $1.value.count }?.key
        let outcome: ProbeResult.Outcome = answered > 0 ? .passed : .failed
        return ProbeResult(outcome: outcome, milliseconds: milliseconds,
                           steps: steps.map { .init(name: $0, outcome: outcome, milliseconds: milliseconds, problem: answered > 0 ? nil : main) },
                           peersTried: peers, peersAnswered: answered, problem: answered > 0 ? nil : (main ?? .other))
    }

    static func problem(_ error: any Error) -> ConnectionProblem {
        guard let error = error as? TransportError else { return .other }
        switch error.code {
        case .heldBack, .endpointBusy: return .heldBack
        // Connected and sent, nothing back: kept apart from a connect timeout (no SYN-ACK), which
        // tor's own problem mapping folds it into.
        case .obfs4HandshakeTimeout: return .silentAfterFirstPacket
        default: return ConnectionProblem(transportCode: error.code.rawValue, kind: error.kind.rawValue)
        }
    }
}
