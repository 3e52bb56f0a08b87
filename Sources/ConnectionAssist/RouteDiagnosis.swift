import Foundation
import PosternLinkSpec

/// What ``CensorReader`` concluded for one route: the technique it most likely faces (or none it can
/// name), how sure it is, what was observed, which transports would pass it, and whether the route
/// should be left now.
public struct RouteDiagnosis: Sendable, Hashable, CustomStringConvertible {
    /// An open set of blocking techniques; raw values appear in `--json` and `postern status`.
    public struct Technique: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The transport's protocol is recognised and cut (fully-encrypted-traffic detection).
        public static let protocolBlock = Technique(rawValue: "protocol-block")
        /// Connections to datacentre addresses go silent after some KB.
        public static let freeze = Technique(rawValue: "freeze")
        /// The route's addresses do not answer while others do.
        public static let addressBlock = Technique(rawValue: "address-block")
        /// The TLS handshake dies after our ClientHello while other TLS passes.
        public static let fingerprintBlock = Technique(rawValue: "fingerprint-block")
        /// A certificate that is not trusted: a censor in the middle, or a wrong pin.
        public static let interception = Technique(rawValue: "interception")
        /// It works, slowly.
        public static let throttle = Technique(rawValue: "throttle")
        /// Every address refused: closed ports, or a censor refusing for them (no technique claimed).
        public static let refusedEverywhere = Technique(rawValue: "refused")
        /// Nothing answers anywhere: offline, or everything blocked (no technique claimed).
        public static let nothingAnswers = Technique(rawValue: "nothing-answers")
        /// A reset after the first packet, but the address still answers: not enough to name a cause.
        public static let inconclusive = Technique(rawValue: "inconclusive")

        /// For people: "protocol block", "freeze", ...
        public var words: String {
            switch self {
            case .refusedEverywhere: return "refused everywhere"
            default: return rawValue.replacingOccurrences(of: "-", with: " ")
            }
        }
    }

    /// How long a diagnosis that rules its route out holds on this network: a detector's block of
    /// an ip:port lasts about 180 s (Wu et al., USENIX Security 2023), so a little longer.
    public static let holds: Duration = .seconds(200)

    /// "seen" when two or more independent observations agree, "likely" otherwise: the strongest
    /// word the reader uses.
    public struct Confidence: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
        public static let seen = Confidence(rawValue: "seen")
        public static let likely = Confidence(rawValue: "likely")
    }

    public let technique: Technique
    public let confidence: Confidence
    /// What was observed, as seen ("reset 31 ms after our first packet, then the address went silent").
    public let observed: String
    /// What it most likely is, in words; empty when no technique is named.
    public let meaning: String
    /// Transports that should pass this technique here.
    public let passes: [TransportName]
    /// True when the route cannot work here: leave it now.
    public let rulesOutRoute: Bool

    public init(technique: Technique, confidence: Confidence, observed: String, meaning: String,
                passes: [TransportName], rulesOutRoute: Bool) {
        self.technique = technique
        self.confidence = confidence
        self.observed = observed
        self.meaning = meaning
        self.passes = passes
        self.rulesOutRoute = rulesOutRoute
    }

    /// Whether `transport` (nil: direct, which speaks tor's TLS as vanilla bridges do) should pass
    /// the technique.
    public func passes(_ transport: TransportName?) -> Bool { passes.contains(transport ?? .vanilla) }

    /// One line: what was seen, what it most likely is, what would pass.
    public var description: String {
        var line = observed
        if !meaning.isEmpty { line += ": \(meaning)" }
        if !passes.isEmpty { line += "; would pass: " + passes.map(\.rawValue).joined(separator: ", ") }
        return line
    }
}
