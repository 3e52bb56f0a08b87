import PosternSystem
import PosternLinkSpec
import Foundation
import PosternTor

/// Per-kind limits: the defaults with overrides from the settings file and the command line.
/// Keys are "direct" or a transport name.
public struct RouteLimitTable: Sendable, Hashable {
    public private(set) var overrides: [String: RouteLimits]
    /// When set, no route's ceiling exceeds it (`postern run --stall-timeout`).
    public var ceilingCap: Duration?

    public init(overrides: [String: RouteLimits] = [:], ceilingCap: Duration? = nil) {
        self.overrides = overrides
        self.ceilingCap = ceilingCap
    }

    /// Validates a kind: "direct" or a transport name.
    public static func kind(validating text: String) throws(TorCoreError) -> String {
        if text == "direct" { return text }
        guard let name = TransportName.known(matching: text) ?? TransportName(text) else {
            throw TorCoreError(.invalidConfiguration, kind: .usage, "'\(text)' is not direct or a transport name")
        }
        return name.rawValue
    }

    public mutating func set(_ limits: RouteLimits, forKind kind: String) { overrides[kind] = limits }
    /// Returns route kinds to their defaults: `kinds`, or every kind when it is empty.
    public mutating func resetToDefaults(_ kinds: [String] = []) {
        overrides = kinds.isEmpty ? [:] : overrides.filter { !kinds.contains($0.key) }
    }
    public mutating func merge(_ other: RouteLimitTable) {
        overrides.merge(other.overrides) { _, new in new }
        if let cap = other.ceilingCap { ceilingCap = cap }
    }

    public func limits(for transport: TransportName?) -> RouteLimits {
        var limits = overrides[transport?.rawValue ?? "direct"] ?? RouteLimits.defaults(for: transport)
        if let ceilingCap, limits.ceiling > ceilingCap {
            limits.ceiling = ceilingCap
            limits.noProgressWindow = min(limits.noProgressWindow, ceilingCap)
        }
        return limits
    }
}
