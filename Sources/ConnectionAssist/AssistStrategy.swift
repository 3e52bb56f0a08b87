import Foundation
import PosternTor

/// How connection assist picks and leaves routes.
public struct AssistStrategy: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
    /// One route after another, each left only by its ceiling or no-progress window (the policy
    /// before issue 14, kept for comparison).
    public static let sequential = AssistStrategy(rawValue: "sequential")
    /// Probe every route while tor tries the first, leave a route on failure signals or a failed
    /// probe, switch to the best route that passed.
    public static let race = AssistStrategy(rawValue: "race")

    public init(parsing text: String) throws(TorCoreError) {
        guard text == "race" || text == "sequential" else {
            throw TorCoreError(.invalidConfiguration, kind: .usage, "'\(text)' is not an assist strategy (race or sequential)")
        }
        self.init(rawValue: text)
    }
}
