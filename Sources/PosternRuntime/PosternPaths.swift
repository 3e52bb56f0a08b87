import Foundation

/// Where Postern keeps its files, as the CLI resolves them: an app that shares the user's settings
/// with `postern`, or attaches to a running `postern run` (``runStatusFile``), finds them here.
/// An explicit directory (`--config-dir`) or POSTERN_CONFIG_DIR puts everything, settings and
/// state, under one directory, which keeps tests and parallel trials apart.
public struct PosternPaths: Sendable {
    public let configDirectory: URL
    public let stateDirectory: URL

    public init(configDirectoryOverride: String?, environment: [String: String] = ProcessInfo.processInfo.environment) {
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

    public var torDataDirectory: URL { stateDirectory.appendingPathComponent("tor") }
    /// Written by a running `postern run`, read by `postern status`.
    public var runStatusFile: URL { stateDirectory.appendingPathComponent("run-status.json") }
}
