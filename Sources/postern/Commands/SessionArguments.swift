import BridgeConfig
import Foundation
import PosternCore
import PosternRuntime

/// The options of commands that run a session (`run`, `nostr`, `geo`), turned into the library's
/// settings and options.
extension Invocation {
    /// The store, this run's `--bridge`/`--bridges-file`/`--transport`, the built-in bridges and
    /// connection assist's limits (`--route-timeout`, capped by `--stall-timeout`).
    func sessionSettings() throws -> SessionSettings {
        let store: BridgeStore
        do { store = try BridgeStore(directory: arguments.value("config-dir"), rules: Transports.argumentRules) } catch { throw CommandFailure(error.message) }
        var settings: SessionSettings
        do {
            settings = try SessionSettings.directory(store: store, configDirectory: paths.configDirectory, stateDirectory: paths.stateDirectory)
        } catch {
            throw CommandFailure(error.message)
        }
        // A private network (DirAuthority or TestingTorNetwork in --tor-options-file) gets no
        // built-in bridges unless named: Tor Browser's public bridges cannot reach it, and tests
        // must never dial them.
        if let file = arguments.value("builtin-bridges") {
            settings.builtins = try readBuiltins(file)
        } else if let file = arguments.value("tor-options-file"),
                  let options = try? TorOption.parseLines(String(contentsOfFile: file, encoding: .utf8)),
                  SessionSettings.isPrivateNetwork(options) {
            settings.builtins = nil
        }
        for text in arguments.all("route-timeout") {
            guard let equals = text.firstIndex(of: "=") else {
                throw usageError("--route-timeout needs KIND=CEILING/WINDOW (e.g. direct=45/30), not '\(text)'")
            }
            do {
                let kind = try RouteLimitTable.kind(validating: String(text[..<equals]))
                settings.limits.set(try RouteLimits(parsing: String(text[text.index(after: equals)...])), forKind: kind)
            } catch {
                throw usageError("--route-timeout \(text): \(error.message)")
            }
        }
        if let text = arguments.value("stall-timeout"), let seconds = Double(text), seconds > 0 {
            settings.limits.ceilingCap = .milliseconds(Int64(seconds * 1000))
        }
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
            let lines = try InputReader.bridgeLines(from: file, output: output)
            guard !lines.isEmpty else { throw usageError("--bridges-file \(file): no bridge lines in it") }
            for (number, text) in lines {
                do {
                    settings.overrideBridges.append(try BridgeLine.parse(text, rules: Transports.argumentRules, logging: logging).line)
                } catch {
                    throw usageError("--bridges-file \(file) line \(number): \(error.message)")
                }
            }
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
            if let text = arguments.value("stall-timeout") {
                guard let seconds = Double(text), seconds > 0 else {
                    throw usageError("--stall-timeout needs a positive number of seconds, not '\(text)'")
                }
                options.stallTimeout = .milliseconds(Int64(seconds * 1000))
            }
            if let file = arguments.value("tor-options-file") {
                guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                    throw usageError("cannot read --tor-options-file '\(file)'")
                }
                options.torOptions = try TorOption.parseLines(text)
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
        if data.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) == UInt8(ascii: "{") {
            do { return try BuiltinBridges(jsonData: data, rules: Transports.argumentRules) } catch {
                throw usageError("--builtin-bridges '\(file)': \(error.message)")
            }
        }
        var lines: [BridgeLine] = []
        for (index, raw) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var text = raw.trimmingCharacters(in: .whitespaces)
            if text.isEmpty || text.hasPrefix("#") { continue }
            if text.hasPrefix("Bridge ") { text = String(text.dropFirst("Bridge ".count)) }
            do {
                lines.append(try BridgeLine.parse(text, rules: Transports.argumentRules, logging: .safe).line)
            } catch {
                throw usageError("--builtin-bridges '\(file)' line \(index + 1): \(error.message)")
            }
        }
        return BuiltinBridges(source: file, lines: lines)
    }
}

extension SessionError {
    /// Settings that cannot work as given are usage errors only where the CLI named them; a
    /// session's errors are failures (exit 1) with the library's message.
    var asCommandFailure: CommandFailure { CommandFailure(message) }
}
