import PosternLinkSpec
import PosternSystem

/// A stored bridge as listings show it: never the address, fingerprint or cert unless the policy
/// is unsafe.
public struct BridgeListing: Encodable, Hashable, Sendable {
    public let id: String
    public let enabled: Bool
    public let transport: String
    /// The line, scrubbed unless the policy is unsafe.
    public let line: String

    /// `bridge` as shown under `policy`: scrubbed unless unsafe.
    public init(_ bridge: StoredBridge, policy: LoggingPolicy) {
        id = bridge.id.rawValue
        enabled = bridge.isEnabled
        transport = bridge.line.transport.description(policy: policy)
        line = bridge.line.description(policy: policy)
    }

    /// The bridges as a table: ID, STATE (on or off), TRANSPORT, BRIDGE.
    public static func table(_ bridges: [StoredBridge], policy: LoggingPolicy) -> String {
        table(bridges.map { BridgeListing($0, policy: policy) })
    }

    /// Listings made before (``init(_:policy:)``) as the same table.
    public static func table(_ listings: [BridgeListing]) -> String {
        PlainText.table(header: ["ID", "STATE", "TRANSPORT", "BRIDGE"],
                        rows: listings.map { [$0.id, $0.enabled ? "on" : "off", $0.transport, $0.line] })
    }
}

/// Every stored bridge as `postern bridges list` shows it: as JSON (`bridges`, `scrubbed`) or as
/// ``text``.
public struct StoredBridgesListing: Encodable, Hashable, Sendable {
    public let bridges: [BridgeListing]
    /// Whether the lines are scrubbed (the policy is not unsafe).
    public let scrubbed: Bool

    /// Every bridge `configuration` holds, in stored order, as shown under `policy`.
    public init(_ configuration: BridgeConfiguration, policy: LoggingPolicy) {
        bridges = configuration.bridges.map { BridgeListing($0, policy: policy) }
        scrubbed = !policy.unsafeLogging
    }

    /// The table and a count ("2 bridges, 1 on"), or a hint when nothing is stored.
    public var text: String {
        guard !bridges.isEmpty else { return "no bridges stored (add some with 'postern bridges add')" }
        let enabled = bridges.filter(\.enabled).count
        return BridgeListing.table(bridges) + "\n" + "\(PlainText.counted(bridges.count, "bridge")), \(enabled) on"
    }
}

extension BridgeConfiguration {
    /// Removes the bridges `ids`, one report line each ("removed ID (transport)"). An unknown ID
    /// throws `unknownBridgeID`; inside ``BridgeStore/update(_:)`` nothing is then written.
    public mutating func remove(_ ids: [BridgeID], policy: LoggingPolicy) throws(BridgeConfigError) -> [String] {
        var lines: [String] = []
        for id in ids {
            let removed = try remove(id)
            lines.append("removed \(id) (\(removed.line.transport.description(policy: policy)))")
        }
        return lines
    }

    /// Switches the bridges `ids` on or off, one report line each ("ID (transport) is now on",
    /// "... was already off"). An unknown ID throws `unknownBridgeID`, as ``remove(_:policy:)``.
    public mutating func setEnabled(_ enabled: Bool, for ids: [BridgeID], policy: LoggingPolicy) throws(BridgeConfigError) -> [String] {
        let word = enabled ? "on" : "off"
        var lines: [String] = []
        for id in ids {
            let transport = bridge(id).map { $0.line.transport.description(policy: policy) } ?? "?"
            if bridge(id)?.isEnabled == enabled {
                lines.append("\(id) (\(transport)) was already \(word)")
                continue
            }
            try setEnabled(enabled, for: id)
            lines.append("\(id) (\(transport)) is now \(word)")
        }
        return lines
    }
}
