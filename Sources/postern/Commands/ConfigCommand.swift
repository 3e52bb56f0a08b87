import BridgeConfig
import Foundation
import PosternRuntime

extension Command {
    static let config = Command(
        name: "config",
        summary: "Show the whole configuration",
        subcommands: [.configShow])

    static let configShow = Command(
        name: "show",
        summary: "Show the configuration, its file and schema version (scrubbed unless --unsafe-logging)",
        options: [.flag("json", "print the configuration as JSON")],
        run: { invocation in
            try invocation.requireNoPositionals()
            let store = try invocation.bridgeStore()
            let configuration = try store.load()
            let exists = FileManager.default.fileExists(atPath: store.filePath)
            let policy = invocation.loggingPolicy
            if invocation.json {
                struct Relays: Encodable { let builtin: [String]; let custom: [String] }
                struct Shown: Encodable {
                    let file: String; let fileExists: Bool; let version: Int; let torEnabled: Bool; let transport: String
                    let bridges: [BridgeListing]; let relays: Relays; let scrubbed: Bool
                }
                try invocation.output.json(Shown(
                    file: store.filePath, fileExists: exists, version: BridgeStore.currentVersion,
                    torEnabled: configuration.torEnabled,
                    transport: TransportSetting.name(configuration.transport, policy: policy),
                    bridges: configuration.bridges.map { BridgeListing($0, policy: policy) },
                    relays: Relays(builtin: NostrRelayURL.builtin.map(\.rawValue), custom: configuration.customRelays.map(\.rawValue)),
                    scrubbed: !policy.unsafeLogging))
                return 0
            }
            var lines = [
                "file: \(store.filePath)\(exists ? "" : " (not written yet; defaults shown)")",
                "schema version: \(BridgeStore.currentVersion)",
                "tor: \(configuration.torEnabled ? "on" : "off")",
                "transport: \(TransportSetting.name(configuration.transport, policy: policy))",
                "bridges: \(configuration.bridges.count) (\(configuration.bridges.filter(\.isEnabled).count) on)",
            ]
            if !configuration.bridges.isEmpty {
                lines += BridgeListing.table(configuration.bridges, policy: policy).split(separator: "\n").map { "  \($0)" }
            }
            lines.append("relays: \(NostrRelayURL.builtin.count) built-in, \(configuration.customRelays.count) custom")
            lines += NostrRelayURL.builtin.map { "  \($0) (built-in)" } + configuration.customRelays.map { "  \($0) (custom)" }
            invocation.output.print(lines.joined(separator: "\n"))
            return 0
        })
}
