import BridgeConfig
import Foundation
import PosternLinkSpec
import PosternSystem

/// The whole stored configuration as `postern config show` shows it: the settings file, its
/// schema version, the Tor preference, the transport, the bridges (scrubbed unless the policy is
/// unsafe) and the Nostr relays; as JSON or as ``text``.
package struct SettingsOverview: Encodable, Sendable {
    package struct Relays: Encodable, Sendable {
        package let builtin: [String]
        package let custom: [String]
    }

    /// The settings file's path.
    package let file: String
    /// False before anything was stored: the values shown are the defaults.
    package let fileExists: Bool
    package let version: Int
    package let torEnabled: Bool
    package let transport: String
    package let bridges: [BridgeListing]
    package let relays: Relays
    package let scrubbed: Bool

    /// The overview of `store`, loaded once.
    package init(store: BridgeStore, policy: LoggingPolicy) throws(BridgeConfigError) {
        let configuration = try store.load()
        file = store.filePath
        fileExists = FileManager.default.fileExists(atPath: store.filePath)
        version = BridgeStore.currentVersion
        torEnabled = configuration.torEnabled
        transport = TransportSetting.name(configuration.transport, policy: policy)
        bridges = configuration.bridges.map { BridgeListing($0, policy: policy) }
        relays = Relays(builtin: NostrRelayURL.builtin.map(\.rawValue), custom: configuration.customRelays.map(\.rawValue))
        scrubbed = !policy.unsafeLogging
    }

    /// One line per setting, the bridges and relays indented below their counts.
    package var text: String {
        var lines = [
            "file: \(file)\(fileExists ? "" : " (not written yet; defaults shown)")",
            "schema version: \(version)",
            "tor: \(torEnabled ? "on" : "off")",
            "transport: \(transport)",
            "bridges: \(bridges.count) (\(bridges.filter(\.enabled).count) on)",
        ]
        if !bridges.isEmpty {
            lines += BridgeListing.table(bridges).split(separator: "\n").map { "  \($0)" }
        }
        lines.append("relays: \(relays.builtin.count) built-in, \(relays.custom.count) custom")
        lines += relays.builtin.map { "  \($0) (built-in)" } + relays.custom.map { "  \($0) (custom)" }
        return lines.joined(separator: "\n")
    }
}
