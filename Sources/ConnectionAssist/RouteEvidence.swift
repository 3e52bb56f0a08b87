import PosternLinkSpec
import TransportBase

/// Assembles ``CensorReader/Evidence`` per route from what the session saw: the flows of its
/// ``FlowLedger`` (tor's dials through the in-process transports, probes, confirm connects), the
/// transports' typed dial errors and the probes' results. Pure, so the assignment rules are unit
/// tests (docs/plans/CENSOR-AWARE-ASSIST.md, sections 1 and 2).
///
/// Bridge addresses are compared here and never printed: nothing this type returns carries one
/// into text.
enum RouteEvidence {
    /// The key of the route each flow belongs to (nil: none of the routes, e.g. a probe of tor's
    /// directory authorities). By address first (one of the route's bridges); a tor dial whose
    /// address is no route's (a webtunnel line holds a placeholder address) goes to the route of its
    /// transport tag: the current route when it uses that transport, else the first that does.
    static func routeKey(of flow: FlowReport, routes: [AssistRoute], addresses: [String: Set<TransportEndpoint>],
                         current: AssistRoute?) -> String? {
        let tagged = flow.origin.transportName
        let byAddress = routes.filter { route in
            addresses[route.key]?.contains(flow.peer) == true && (tagged == nil || route.transport == tagged)
        }
        if let current, byAddress.contains(where: { $0.key == current.key }) { return current.key }
        if let first = byAddress.first { return first.key }
        guard let tagged else { return nil }
        if let current, current.transport == tagged { return current.key }
        return routes.first { $0.transport == tagged }?.key
    }

    /// Each route's bridge addresses (direct: none).
    static func addresses(of routes: [AssistRoute]) -> [String: Set<TransportEndpoint>] {
        var result: [String: Set<TransportEndpoint>] = [:]
        for route in routes {
            result[route.key] = Set(route.bridges.compactMap { try? TransportEndpoint(parsing: $0.address.description) })
        }
        return result
    }

    /// Whether a route's transport opens with random-looking bytes (a fully-encrypted protocol)
    /// rather than a TLS ClientHello: only obfs4 among the transports Postern knows. Anything else
    /// counts as TLS-like, so that no protocol block is claimed for it.
    static func firstPacketIsTLS(_ transport: TransportName?) -> Bool { transport != .obfs4 }

    /// The evidence for every route that has any, keyed by route key.
    /// - Parameters:
    ///   - flows: the ledger's finished and open flows; confirm connects are left out (their
    ///     outcome is in `confirmations`).
    ///   - dialErrors: typed errors of tor's dials, by route key.
    ///   - probesPassed: keys of routes whose probe passed in this pass.
    ///   - currentWithoutProgress: how long the route being tried (`current`) has gone without
    ///     bootstrap progress; nil when none is being tried.
    static func assemble(routes: [AssistRoute], current: AssistRoute?, flows: [FlowReport], dialErrors: [String: [TransportError]],
                         confirmations: [TransportEndpoint: CensorReader.Confirmation], probesPassed: Set<String>,
                         connectedRoute: String?, currentWithoutProgress: Duration? = nil) -> [String: CensorReader.Evidence] {
        let addresses = addresses(of: routes)
        var byRoute: [String: [FlowReport]] = [:]
        // Keys of the routes (nil: no route) some connection of which completed.
        var answered: Set<String?> = []
        for flow in flows where flow.origin != .confirm {
            let key = routeKey(of: flow, routes: routes, addresses: addresses, current: current)
            if let key { byRoute[key, default: []].append(flow) }
            if flow.connected { answered.insert(key) }
        }
        var result: [String: CensorReader.Evidence] = [:]
        for route in routes where byRoute[route.key] != nil || dialErrors[route.key] != nil {
            let otherAnswered = answered.contains { $0 != route.key } || probesPassed.contains { $0 != route.key }
                || (connectedRoute != nil && connectedRoute != route.key)
            result[route.key] = CensorReader.Evidence(
                transport: route.transport ?? .vanilla, firstPacketIsTLS: firstPacketIsTLS(route.transport),
                flows: byRoute[route.key] ?? [], dialErrors: dialErrors[route.key] ?? [], confirmations: confirmations,
                otherRouteAnswered: otherAnswered,
                torWithoutProgress: route.key == current?.key ? currentWithoutProgress : nil)
        }
        return result
    }

    /// Flows after which a SYN-only confirm connect tells a protocol block from a path or bridge
    /// that closed one connection: a reset or silence right after our first packet, on a transport
    /// whose first packet is not TLS.
    static func needsConfirmation(_ flow: FlowReport, transport: TransportName?) -> Bool {
        guard flow.origin != .confirm, !firstPacketIsTLS(transport) else { return false }
        let kind = FlowObservation(flow).kind
        return kind == .resetAfterFirstPacket || kind == .silentAfterFirstPacket
    }
}
