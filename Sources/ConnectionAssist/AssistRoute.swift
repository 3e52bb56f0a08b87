import PosternLinkSpec
import PosternSystem
import Foundation
import PosternTor

/// How long connection assist gives one route: a ceiling on the whole attempt and a window in
/// which bootstrap must make progress.
public struct RouteLimits: Sendable, Hashable, CustomStringConvertible {
    /// The longest one attempt on the route may take before assist moves on.
    public var ceiling: Duration
    /// How long bootstrap may stay at the same percentage before assist moves on.
    public var noProgressWindow: Duration

    public init(ceiling: Duration, noProgressWindow: Duration) {
        self.ceiling = ceiling
        self.noProgressWindow = noProgressWindow
    }

    /// Parses "CEILING/WINDOW" in seconds, e.g. "45/30".
    public init(parsing text: String) throws(TorCoreError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let ceiling = Double(parts[0]), let window = Double(parts[1]),
              ceiling > 0, window > 0, ceiling.isFinite, window.isFinite, ceiling <= 86_400, window <= 86_400 else {
            throw TorCoreError(.invalidConfiguration, kind: .usage,
                               "'\(text)' is not CEILING/WINDOW in seconds (two positive numbers, e.g. 45/30)")
        }
        self.ceiling = .milliseconds(Int64(ceiling * 1000))
        self.noProgressWindow = .milliseconds(Int64(window * 1000))
    }

    /// "45/30", as `init(parsing:)` reads it.
    public var description: String { "\(ceiling.wholeOrFractionalSeconds)/\(noProgressWindow.wholeOrFractionalSeconds)" }

    public static let directDefault = RouteLimits(ceiling: .seconds(45), noProgressWindow: .seconds(30))
    public static let obfs4Default = RouteLimits(ceiling: .seconds(120), noProgressWindow: .seconds(90))
    public static let snowflakeDefault = RouteLimits(ceiling: .seconds(300), noProgressWindow: .seconds(120))

    /// The built-in limits for a route kind: `nil` is direct. Plain bridges bootstrap like direct;
    /// transports without their own defaults get obfs4's.
    public static func defaults(for transport: TransportName?) -> RouteLimits {
        switch transport {
        case nil, .vanilla?: .directDefault
        case .snowflake?: .snowflakeDefault
        default: .obfs4Default
        }
    }
}


/// One way to reach tor that connection assist can try: direct, or one transport's bridges from
/// one origin. Holds bridge lines: only `key` and `label` may be shown.
public struct AssistRoute: Sendable, Hashable {
    /// Where a route's bridges come from.
    public struct Origin: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public static let yours = Origin(rawValue: "yours")
        public static let builtin = Origin(rawValue: "built-in")
        /// `postern run --bridge`.
        public static let commandLine = Origin(rawValue: "command line")
        public var description: String { rawValue }
    }

    /// Nil for direct.
    public let transport: TransportName?
    public let origin: Origin?
    public let bridges: [BridgeLine]
    public var limits: RouteLimits

    public static func direct(limits: RouteLimits = .directDefault) -> AssistRoute {
        AssistRoute(transport: nil, origin: nil, bridges: [], limits: limits)
    }

    public init(transport: TransportName?, origin: Origin?, bridges: [BridgeLine], limits: RouteLimits) {
        self.transport = transport
        self.origin = origin
        self.bridges = bridges
        self.limits = limits
    }

    public var isDirect: Bool { transport == nil }

    /// A stable name for remembering the route: "direct", "obfs4:yours", "snowflake:built-in".
    public var key: String {
        guard let transport, let origin else { return "direct" }
        return "\(transport.rawValue):\(origin.rawValue)"
    }

    /// For people: "direct", "bridges (obfs4, yours)", "bridges (snowflake, built-in)".
    public var label: String {
        guard let transport, let origin else { return "direct" }
        return "bridges (\(transport.description(policy: .safe)), \(origin))"
    }
}

/// Builds the order connection assist tries: direct, your obfs4 bridges, the built-in obfs4
/// bridges, snowflake (yours, then built-in), then every other transport this build can run that
/// has bridges, plain bridges last; the route that last succeeded goes first.
public struct AssistRoutePlan: Sendable, Hashable {
    public let routes: [AssistRoute]
    /// Why some bridges are not tried (a transport this build lacks), for the CLI to show.
    public let notes: [String]
    /// True when the remembered last good route was moved to the front.
    public let lastGoodFirst: Bool

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
        let others = transports.subtracting(leading + [.vanilla]).sorted()
        let order = leading + others + [.vanilla]
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
        if let lastGood, let index = routes.firstIndex(where: { $0.key == lastGood }), index > 0 {
            routes.insert(routes.remove(at: index), at: 0)
            movedFirst = true
        }
        self.routes = routes
        self.notes = notes
        lastGoodFirst = movedFirst || (lastGood != nil && routes.first?.key == lastGood)
    }
}

extension Duration {
    /// Seconds as "45" or "2.5", for messages and settings.
    var wholeOrFractionalSeconds: String {
        let seconds = self.seconds
        if seconds == seconds.rounded() { return String(Int64(seconds)) }
        return String(format: "%.1f", seconds)
    }

    var secondsValue: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
