import Foundation
import PosternLinkSpec

/// Builds the order connection assist tries: direct, your obfs4 bridges, the built-in obfs4
/// bridges, snowflake (yours, then built-in), then every other transport this build can run that
/// has bridges, then plain bridges, dnstt last; the route that last succeeded goes first.
public struct AssistRoutePlan: Sendable, Hashable {
    public let routes: [AssistRoute]
    /// Why some bridges are not tried (a transport this build lacks), for the CLI to show.
    public let notes: [String]
    /// True when the remembered last good route was moved to the front.
    public let lastGoodFirst: Bool
    /// Diagnoses this network's memory keeps for routes of the plan, by route key: those routes
    /// go last, and the runner hands the diagnoses to the selector (which skips a route while its
    /// diagnosis still holds).
    public let remembered: [String: RememberedDiagnosis]

    /// - Parameters:
    ///   - yours: the user's enabled bridges (or `--bridge` lines, with `includeDirect` false).
    ///   - builtins: the built-in bridges by transport; empty for none.
    ///   - available: the transports with an in-process client; vanilla needs none.
    ///   - lastGood: the key of the route that last reached 100%, if remembered.
    ///   - custom: every bridge of the user's, enabled or not: a built-in line with the identity or
    ///     address of one of them is left out (as `BridgeSelection` does), so a custom bridge is
    ///     never replaced or resurrected by a built-in. Defaults to `yours`.
    public init(yours: [BridgeLine], yoursOrigin: AssistRoute.Origin = .yours, custom: [BridgeLine]? = nil,
                builtins: [TransportName: [BridgeLine]], available: Set<TransportName>, limits: RouteLimitTable,
                lastGood: String?, includeDirect: Bool = true, memory: AssistMemory? = nil, network: String = AssistMemory.globalNetwork,
                now: Date = Date()) {
        let customIdentities = Set((custom ?? yours).map(\.identity))
        let customAddresses = Set((custom ?? yours).map(\.address))
        var notes: [String] = []
        let transports = Set(yours.map(\.transport)).union(builtins.filter { !$0.value.isEmpty }.keys)
        let leading: [TransportName] = [.obfs4, .snowflake]
        // dnstt after everything (issue #23): it is slow, and it talks to a DNS resolver a
        // censor can watch; it is the way out when nothing but DNS is left.
        let trailing: [TransportName] = [.vanilla, .dnstt]
        let others = transports.subtracting(leading + trailing).sorted()
        let order = leading + others + trailing
        var routes: [AssistRoute] = includeDirect ? [.direct(limits: limits.limits(for: nil))] : []
        for transport in order where transports.contains(transport) {
            guard transport.isVanilla || available.contains(transport) else {
                notes.append("\(transport.description(policy: .safe)) bridges are skipped: this build has no \(transport.description(policy: .safe)) client (an external one can serve them: 'postern transport plugin add')")
                continue
            }
            let own = yours.filter { $0.transport == transport }
            if !own.isEmpty {
                routes.append(AssistRoute(transport: transport, origin: yoursOrigin, bridges: own, limits: limits.limits(for: transport)))
            }
            if let builtin = builtins[transport], !builtin.isEmpty {
                let extra = builtin.filter { !customIdentities.contains($0.identity) && !customAddresses.contains($0.address) }
                if !extra.isEmpty {
                    routes.append(AssistRoute(transport: transport, origin: .builtin, bridges: extra,
                                              limits: limits.limits(for: transport)))
                }
            }
        }
        var movedFirst = false
        var lastGood = lastGood
        if let memory {
            // This network's memory orders the routes; its best route counts as the last good one.
            let ordered = memory.order(routes.map(\.key), network: network, now: now)
            routes = ordered.compactMap { key in routes.first { $0.key == key } }
            if let best = ordered.first, memory.score(best, network: network, now: now) > 0.05 {
                lastGood = best
                movedFirst = true
            }
        }
        var remembered = memory?.diagnoses(network: network, now: now) ?? [:]
        remembered = remembered.filter { entry in routes.contains { $0.key == entry.key } }
        // A route a diagnosis ruled out here is never the last good one to put first.
        if let key = lastGood, remembered[key] != nil {
            lastGood = nil
            movedFirst = false
        }
        if let lastGood, let index = routes.firstIndex(where: { $0.key == lastGood }), index > 0 {
            routes.insert(routes.remove(at: index), at: 0)
            movedFirst = true
        }
        // Routes ruled out on this network go last (in their order), and the user is told why.
        let ruledOut = routes.filter { remembered[$0.key] != nil }
        routes = routes.filter { remembered[$0.key] == nil } + ruledOut
        for route in ruledOut {
            guard let diagnosis = remembered[route.key] else { continue }
            notes.append("\(route.label) goes last: on this network \(Self.ago(diagnosis.at, now: now)) ago, \(diagnosis.diagnosis)")
        }
        self.routes = routes
        self.notes = notes
        self.remembered = remembered
        lastGoodFirst = movedFirst || (lastGood != nil && routes.first?.key == lastGood)
    }

    /// "40 s", "12 min", "3 h": how long ago, for a note.
    static func ago(_ then: Date, now: Date) -> String {
        let seconds = max(0, Int(now.timeIntervalSince(then)))
        if seconds < 120 { return "\(seconds) s" }
        if seconds < 7_200 { return "\(seconds / 60) min" }
        return "\(seconds / 3_600) h"
    }
}
