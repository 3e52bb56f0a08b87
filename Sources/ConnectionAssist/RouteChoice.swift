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
        /// It should pass what was diagnosed on a route left before.
        public static let passesDiagnosis = Reason(rawValue: "passes-diagnosis")
    }
    public let route: AssistRoute
    public let reason: Reason
    public let probe: ProbeResult?
    /// For passesDiagnosis: the diagnosis and the route it was made on.
    public var diagnosis: RouteDiagnosis? = nil
    public var diagnosedRoute: AssistRoute? = nil

    public init(route: AssistRoute, reason: Reason, probe: ProbeResult?, diagnosis: RouteDiagnosis? = nil,
                diagnosedRoute: AssistRoute? = nil) {
        self.route = route
        self.reason = reason
        self.probe = probe
        self.diagnosis = diagnosis
        self.diagnosedRoute = diagnosedRoute
    }

    public var description: String {
        switch reason {
        case .probePassed: return "its probe \(probe?.summary ?? "passed")"
        case .firstInOrder: return "it is first in the order"
        case .newInSettings: return "the settings added it"
        case .passesDiagnosis:
            let technique = diagnosis?.technique.words ?? "block"
            return "it should pass the \(technique)" + (diagnosedRoute.map { " seen on \($0.label)" } ?? "")
        default: return "it is next in the order"
        }
    }
}
