import BridgeConfig
import Foundation
import PosternTor
import PosternLinkSpec
import PosternRuntime
import PosternSystem

/// What the settings commands share: the store in the configuration directory, the logging policy
/// from `--unsafe-logging`, and argument checks.
extension Invocation {
    var loggingPolicy: LoggingPolicy { LoggingPolicy(unsafeLogging: unsafeLogging) }

    /// The store in the same directory `PosternPaths` resolves, so every command agrees on it.
    func bridgeStore() throws(BridgeConfigError) -> BridgeStore {
        try BridgeStore(directory: paths.configDirectory.path, rules: Transports.argumentRules)
    }

    func requireNoPositionals() throws(UsageError) {
        if let extra = arguments.positionals.first { throw usageError("unexpected argument '\(extra)'") }
    }

    /// The positionals, at least one, for commands like `remove ID...`.
    func requirePositionals(_ what: String) throws(UsageError) -> [String] {
        guard !arguments.positionals.isEmpty else { throw usageError("\(what) is required") }
        return arguments.positionals
    }

    /// `--NAME FILE` for a file a child process reads later: it must be readable now.
    func readableFile(_ name: String) throws(UsageError) -> String? {
        guard let file = arguments.value(name) else { return nil }
        guard FileManager.default.isReadableFile(atPath: file) else { throw usageError("cannot read --\(name) '\(file)'") }
        return file
    }

    /// `--tor-options-file FILE` for children that read it later (`ab`, `bridges test`): checked
    /// here as `run` checks it, so a refused line is a usage error of this command, not a child's.
    func checkedTorOptionsFile() throws(UsageError) -> String? {
        guard let file = try readableFile("tor-options-file") else { return nil }
        _ = try torOptions(fromFile: file)
        return file
    }

    /// The options in a `--tor-options-file` (TorOption.parseLines: a refused line is named).
    func torOptions(fromFile file: String) throws(UsageError) -> [TorOption] {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw usageError("cannot read --tor-options-file '\(file)'")
        }
        do throws(TorCoreError) {
            return try TorOption.parseLines(text)
        } catch {
            throw usageError(error.message)
        }
    }

    /// `--NAME N`, a whole number in `range` (`default` without the option).
    func wholeNumber(_ name: String, default value: Int, range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let text = arguments.value(name) else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw usageError("--\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return number
    }

    /// `--NAME SECONDS`, a positive number up to a week (`default` without the option).
    func positiveSeconds(_ name: String, default value: Double) throws(UsageError) -> Double {
        guard let text = arguments.value(name) else { return value }
        guard let seconds = Double(text), seconds > 0, seconds <= Duration.longestUserWait else {
            throw usageError("--\(name) needs a positive number of seconds (at most \(Int(Duration.longestUserWait)), a week), not '\(text)'")
        }
        return seconds
    }

    /// Bridge IDs from the command line; a malformed one is a usage error.
    func bridgeIDs() throws(UsageError) -> [BridgeID] {
        var ids: [BridgeID] = []
        for text in try requirePositionals("at least one bridge ID (see 'postern bridges list')") {
            guard let id = BridgeID(text) else {
                throw usageError("'\(text)' is not a bridge ID (6 hexadecimal characters, as shown by 'postern bridges list')")
            }
            if !ids.contains(id) { ids.append(id) }
        }
        return ids
    }
}
