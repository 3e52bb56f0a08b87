import BridgeConfig
import DnsttTransport
import TransportBase
import TransportWire

/// dnstt in `postern bridges test`: the line's address is a placeholder (the tunnel goes through a
/// DNS resolver), so no TCP connect is made to it. Instead the dial's own stages, each with what was
/// seen: the resolver reached (a DNS answer came back over udp, dot or doh), the Noise handshake
/// with the dnstt server, and the stream's opening. Nothing here names the resolver, the domain or
/// the key: the details say only what happened and over which kind of link.
extension BridgeHealthCheck {
    static func checkDnstt(_ line: BridgeLine, transport: DnsttTransport, health initial: BridgeHealth,
                           timeout: Duration) async -> BridgeHealth {
        var health = initial
        health.tcp = .init(result: .skipped, detail: "dnstt is reached through a DNS resolver, not its address")
        let pairs = line.arguments.map { TransportArguments.Pair(key: $0.key, value: $0.value) }
        let options: DnsttOptions
        do {
            options = try transport.configuration(from: TransportArguments(pairs))
        } catch {
            health.handshake = .init(result: .failed, detail: error.message)
            health.alive = false
            health.reason = "its arguments are invalid: \(error.message)"
            return health
        }
        let kind: String
        switch options.resolver {
        case .udp: kind = "udp"
        case .dot: kind = "dot"
        case .doh: kind = "doh"
        }
        // The transport's own waits (resolver look-up, TLS, handshake) are each `timeout`; this
        // bounds the whole dial.
        let probe = await StagedProbe<DnsttTransport.Stage>.run(limit: timeout * 3) { stageReached in
            try await transport.probe(options, context: DialContext(), stageReached: stageReached)
        }
        let (times, failure, ended) = (probe.reached, probe.failure, probe.ended)
        let error = failure.map(describe) ?? ""

        // The resolver: the link up, then a DNS answer back.
        if let answered = times[.answered] {
            let how = kind == "udp" ? "a DNS answer came back over udp"
                                    : "TLS with the resolver verified, a DNS answer came back over \(kind)"
            health.resolver = .init(result: .ok, milliseconds: answered, detail: how)
        } else {
            let seen = times[.link] == nil
                ? "the \(kind) link to the resolver did not come up: \(error)"
                : (kind == "udp" ? "no DNS answer came back over udp: \(error)"
                                 : "TLS with the resolver verified, but no DNS answer came back over \(kind): \(error)")
            health.resolver = .init(result: .failed, milliseconds: ended, detail: seen)
            health.handshake = .init(result: .skipped, detail: "an earlier step failed")
            health.stream = .init(result: .skipped, detail: "an earlier step failed")
            health.alive = false
            health.reason = times[.link] == nil ? "resolver not reached: \(error)" : "the resolver did not answer: \(error)"
            return health
        }
        let answeredAt = times[.answered] ?? 0

        // The Noise handshake with the dnstt server behind the resolver.
        if let noise = times[.noise] {
            health.handshake = .init(result: .ok, milliseconds: noise - answeredAt,
                                     detail: "Noise handshake completed (the server's reply verified with the pubkey)")
        } else {
            let seen: String
            if times[.acknowledged] != nil {
                seen = "the dnstt server acknowledged our Noise handshake message, but no Noise reply came (wrong pubkey?)"
            } else if times[.server] != nil {
                seen = "the dnstt server answered through the resolver, but did not acknowledge our Noise handshake message"
            } else {
                seen = "DNS answers came back, but none carried a packet from a dnstt server for this session (wrong domain?)"
            }
            health.handshake = .init(result: .failed, milliseconds: ended - answeredAt, detail: "\(seen): \(error)")
            health.stream = .init(result: .skipped, detail: "an earlier step failed")
            health.alive = false
            health.reason = "Noise handshake failed: \(seen)"
            return health
        }
        let noiseAt = times[.noise] ?? 0

        // The stream's opening (smux SYN acknowledged).
        if let open = times[.open], failure == nil {
            health.stream = .init(result: .ok, milliseconds: open - noiseAt, detail: "stream open (the server acknowledged it)")
        } else {
            health.stream = .init(result: .failed, milliseconds: ended - noiseAt, detail: error)
            health.alive = false
            health.reason = "the stream did not open: \(error)"
        }
        return health
    }
}
