import Foundation
import PosternLinkSpec
import PosternSystem
import PosternTor

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

    /// The route as people read it (``label`` as a ``RouteName``).
    public var name: RouteName { RouteName(label) }

    /// For people: "direct", "bridges (obfs4, yours)", "bridges (snowflake, built-in)".
    public var label: String {
        guard let transport, let origin else { return "direct" }
        return "bridges (\(transport.description(policy: .safe)), \(origin))"
    }
}

extension AssistRoute {
    /// Whether a signal's peer belongs to this route: for bridges, one of its bridges (by
    /// fingerprint or address); for direct, anything (tor picks among many relays). A signal
    /// without a peer (a transport's dial) counts for any route.
    func isPeer(_ peer: String?) -> Bool {
        guard let peer, !isDirect else { return true }
        let upper = peer.uppercased()
        return bridges.contains { bridge in
            if let fingerprint = bridge.fingerprint, upper.contains(fingerprint.hex.uppercased()) { return true }
            return peer.contains(bridge.address.description)
        }
    }
}
