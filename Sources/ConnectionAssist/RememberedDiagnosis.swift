import Foundation
import PosternLinkSpec

/// A diagnosis that ruled its route out, kept in ``AssistMemory`` for the network it was made on
/// (issue #22: "remember the diagnosis per network with the route memory"): the next run there
/// tries that route last, and skips it (no probe, no dial) while the block it saw may still hold.
/// Holds no bridge data: the words never include an address, the route is named by its key.
public struct RememberedDiagnosis: Sendable, Hashable, Codable {
    public var technique: RouteDiagnosis.Technique
    public var confidence: RouteDiagnosis.Confidence
    public var observed: String
    public var meaning: String
    /// Transport names that should pass the technique.
    public var passes: [String]
    /// When it was made (wall clock: it outlives the process).
    public var at: Date

    /// Longest stored text per field: the file stays small whatever a future rule writes.
    static let textLimit = 400

    public init(_ diagnosis: RouteDiagnosis, at: Date) {
        technique = diagnosis.technique
        confidence = diagnosis.confidence
        observed = String(diagnosis.observed.prefix(Self.textLimit))
        meaning = String(diagnosis.meaning.prefix(Self.textLimit))
        passes = diagnosis.passes.map(\.rawValue)
        self.at = at
    }

    /// The diagnosis again; transport names that no longer parse are left out.
    public var diagnosis: RouteDiagnosis {
        RouteDiagnosis(technique: technique, confidence: confidence, observed: observed, meaning: meaning,
                       passes: passes.compactMap(TransportName.init), rulesOutRoute: true)
    }
}
