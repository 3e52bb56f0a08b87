import BridgeConfig
import PosternSystem

/// The built-in and custom relays as `postern relays list` shows them: as JSON or as ``text``.
public struct NostrRelayListing: Encodable, Hashable, Sendable {
    /// The built-in relays' URLs.
    public let builtin: [String]
    /// The user's custom relays' URLs.
    public let custom: [String]
    /// The most custom relays the settings keep.
    public let maximumCustom: Int

    /// The built-in relays and `configuration`'s custom ones.
    public init(_ configuration: BridgeConfiguration) {
        builtin = NostrRelayURL.builtin.map(\.rawValue)
        custom = configuration.customRelays.map(\.rawValue)
        maximumCustom = NostrRelayURL.maximumCustom
    }

    /// The table (RELAY, KIND) and the counts.
    public var text: String {
        let rows = builtin.map { [$0, "built-in"] } + custom.map { [$0, "custom"] }
        return PlainText.table(header: ["RELAY", "KIND"], rows: rows)
            + "\n" + "\(builtin.count) built-in, \(custom.count) custom (up to \(maximumCustom) custom)"
    }
}

/// What adding or removing custom relays did, address by address: each one is changed or
/// reported on its own.
public struct NostrRelayChangeReport: Hashable, Sendable {
    /// "added" or "removed".
    public let verb: String
    /// One line per address given: "added wss://host", "not added: INPUT: reason".
    public private(set) var lines: [String] = []
    /// Addresses that could not be changed.
    public private(set) var failures = 0

    init(verb: String) { self.verb = verb }

    /// Whether any address was not changed (the command then exits 1).
    public var failed: Bool { failures > 0 }

    /// The lines and a summary ("added 2 relays; 1 not added").
    public var text: String {
        var summary = "\(verb) \(PlainText.counted(lines.count - failures, "relay"))"
        if failures > 0 { summary += "; \(failures) not \(verb)" }
        return (lines + [summary]).joined(separator: "\n")
    }

    mutating func record(_ input: String, _ change: () throws(BridgeConfigError) -> NostrRelayURL) {
        do throws(BridgeConfigError) {
            lines.append("\(verb) \(try change().rawValue)")
        } catch {
            failures += 1
            lines.append("not \(verb): \(input): \(error.message)")
        }
    }
}

extension BridgeConfiguration {
    /// Adds each address as a custom relay (normalized); one that is malformed, a duplicate or
    /// over the limit is reported and the others are still added.
    public mutating func addRelays(_ inputs: [String]) -> NostrRelayChangeReport {
        var report = NostrRelayChangeReport(verb: "added")
        for input in inputs {
            report.record(input) { () throws(BridgeConfigError) in try addRelay(input) }
        }
        return report
    }

    /// Removes each custom relay given in any form that normalizes to it; one that is malformed
    /// or not stored is reported and the others are still removed.
    public mutating func removeRelays(_ inputs: [String]) -> NostrRelayChangeReport {
        var report = NostrRelayChangeReport(verb: "removed")
        for input in inputs {
            report.record(input) { () throws(BridgeConfigError) in
                let relay = try NostrRelayURL(normalizing: input)
                try removeRelay(input)
                return relay
            }
        }
        return report
    }
}
