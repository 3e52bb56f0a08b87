import Foundation
import PosternLinkSpec
import PosternSystem
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
