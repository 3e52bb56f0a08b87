import BridgeConfig
import Foundation
import PosternTor
import PosternLinkSpec
import PosternRuntime
import PosternSystem

extension OptionSpec {
    static let torOptionsFile = OptionSpec.value("tor-options-file", "FILE", "extra tor options, one 'Key value' a line (private test networks)")
    static let builtinBridges = OptionSpec.value("builtin-bridges", "FILE",
                                                 "use these bridge lines (or a JSON list) as the built-in bridges (private test networks)")

    /// The tor options of a command that goes through a running `postern run`, or else through a
    /// tor of its own with its data in `<state dir>/dataDirectory` (`nostr`, `geo`).
    static func ownTorOptions(dataDirectory: String) -> [OptionSpec] {
        [
            .value("socks", "[HOST:]PORT", "SOCKS5 listener of this command's tor (default 127.0.0.1:39050; unused when attached to 'postern run')"),
            .value("data-dir", "DIR", "tor's data directory (default: <state dir>/\(dataDirectory))"),
            .value("transport", "NAME", "route for this command's tor: auto, direct or a transport name (default: the stored setting)"),
            torOptionsFile,
            builtinBridges,
        ]
    }
}

/// The options of commands that run a session (`run`, `nostr`, `geo`), turned into the library's
/// settings and options.
extension Invocation {
    /// The store, this run's `--bridge`/`--bridges-file`/`--transport`, the built-in bridges and
    /// connection assist's limits (`--route-timeout`, capped by `--stall-timeout`). `options`:
    /// the session's (``sessionOptions(defaultDataDirectory:)``); its tor options decide the built-ins.
    func sessionSettings(for options: SessionOptions) throws -> SessionSettings {
        let store: BridgeStore
        do { store = try BridgeStore(directory: arguments.value("config-dir"), rules: Transports.argumentRules) } catch { throw CommandFailure(error.message) }
        var settings: SessionSettings
        do {
            settings = try SessionSettings.directory(store: store, configDirectory: paths.configDirectory, stateDirectory: paths.stateDirectory)
        } catch {
            throw CommandFailure(error.message)
        }
        settings.chooseBuiltins(try arguments.value("builtin-bridges").map(readBuiltins), torOptions: options.torOptions)
        for text in arguments.all("route-timeout") {
            do {
                try settings.limits.set(parsingOverride: text)
            } catch {
                throw usageError("--route-timeout \(error.message)")
            }
        }
        if arguments.value("stall-timeout") != nil { settings.limits.ceilingCap = options.stallTimeout }
        let logging: LoggingPolicy = unsafeLogging ? .unsafe : .safe
        let given = arguments.all("bridge")
        if !given.isEmpty {
            InputReader.warnSecretOnCommandLine("--bridge", instead: "--bridges-file FILE (or --bridges-file - for standard input)",
                                                output: output)
        }
        for (index, text) in given.enumerated() {
            do {
                settings.overrideBridges.append(try BridgeLine.parse(text, rules: Transports.argumentRules, logging: logging).line)
            } catch {
                throw usageError("--bridge #\(index + 1): \(error.message)")
            }
        }
        if let file = arguments.value("bridges-file") {
            let input = try InputReader.read(file, output: output)
            let lines: [BridgeLine]
            do {
                lines = try BridgeLineList.parse(input.text, rules: Transports.argumentRules, logging: logging)
            } catch {
                throw usageError("--bridges-file \(file) \(error.message)")
            }
            guard !lines.isEmpty else { throw usageError("--bridges-file \(file): no bridge lines in it") }
            settings.overrideBridges += lines
        }
        if let text = arguments.value("transport") {
            do {
                settings.overrideTransport = try TransportSelection(validating: text)
            } catch {
                throw usageError("--transport: \(error.message)")
            }
        }
        return settings
    }

    /// `--socks`, `--stall-timeout`, `--tor-options-file`, `--data-dir` (default `defaultDataDirectory`).
    func sessionOptions(defaultDataDirectory: URL) throws -> SessionOptions {
        do {
            var options = SessionOptions(dataDirectory: arguments.value("data-dir").map { URL(fileURLWithPath: $0) } ?? defaultDataDirectory)
            options.socks = try arguments.value("socks").map { try SocksEndpoint(parsing: $0) } ?? .default
            if arguments.value("stall-timeout") != nil {
                options.stallTimeout = .clampedSeconds(try positiveSeconds("stall-timeout", default: options.stallTimeout.seconds))
            }
            if let file = arguments.value("tor-options-file") {
                options.torOptions = try torOptions(fromFile: file)
            }
            options.noticeLevelLog = unsafeLogging
            return options
        } catch let error as TorCoreError where error.kind == .usage {
            throw usageError(error.message)
        }
    }

    private func readBuiltins(_ file: String) throws -> BuiltinBridges {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw usageError("cannot read --builtin-bridges '\(file)'")
        }
        do throws(BridgeConfigError) {
            return try BuiltinBridges(listData: data, source: file, rules: Transports.argumentRules)
        } catch {
            // A bad line's message starts with "line N".
            throw usageError("--builtin-bridges '\(file)'\(error.location == nil ? ":" : "") \(error.message)")
        }
    }
}

extension SessionError {
    /// Settings that cannot work as given are usage errors only where the CLI named them; a
    /// session's errors are failures (exit 1) with the library's message.
    var asCommandFailure: CommandFailure { CommandFailure(message) }
}
