/// Why connection assist picked the route it applies next.
public struct RouteChoice: Sendable, Hashable, CustomStringConvertible {
    public struct Reason: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
        /// The first route of a pass (the order: memory, then the default order).
        public static let firstInOrder = Reason(rawValue: "first-in-order")
        /// Its probe passed; it is the best-ranked route that did.
        public static let probePassed = Reason(rawValue: "probe-passed")
        /// The next route in order (no probe has passed yet, or the strategy is sequential).
        public static let nextInOrder = Reason(rawValue: "next-in-order")
        /// The settings added it.
        public static let newInSettings = Reason(rawValue: "new-in-settings")
    }
    public let route: AssistRoute
    public let reason: Reason
    public let probe: ProbeResult?

    public var description: String {
        switch reason {
        case .probePassed: return "its probe \(probe?.summary ?? "passed")"
        case .firstInOrder: return "it is first in the order"
        case .newInSettings: return "the settings added it"
        default: return "it is next in the order"
        }
    }
}
