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
            let overview = try SettingsOverview(store: try invocation.bridgeStore(), policy: invocation.loggingPolicy)
            try invocation.render(overview, text: overview.text)
            return 0
        })
}
