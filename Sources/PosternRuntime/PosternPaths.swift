import Foundation

/// Where the CLI keeps its files: settings, state, and a running `postern run`'s status file
/// (``runStatusFile``), also where plugins keep their state when a caller names no place
/// (`package`: an app names its own directories). An explicit directory (`--config-dir`) or POSTERN_CONFIG_DIR puts everything, settings and
/// state, under one directory, which keeps tests and parallel trials apart.
package struct PosternPaths: Sendable {
    package let configDirectory: URL
    package let stateDirectory: URL

    package init(configDirectoryOverride: String?, environment: [String: String] = ProcessInfo.processInfo.environment) {
        let home = environment["HOME"] ?? NSHomeDirectory()
        if let explicit = configDirectoryOverride ?? environment["POSTERN_CONFIG_DIR"], !explicit.isEmpty {
            configDirectory = URL(fileURLWithPath: explicit)
            stateDirectory = configDirectory.appendingPathComponent("state")
        } else {
            let configHome = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "\(home)/.config"
            let stateHome = environment["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "\(home)/.local/state"
            configDirectory = URL(fileURLWithPath: configHome).appendingPathComponent("postern")
            stateDirectory = URL(fileURLWithPath: stateHome).appendingPathComponent("postern")
        }
    }

    package var torDataDirectory: URL { stateDirectory.appendingPathComponent("tor") }
    /// Written by a running `postern run`, read by `postern status`.
    package var runStatusFile: URL { stateDirectory.appendingPathComponent("run-status.json") }
}
