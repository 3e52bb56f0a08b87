import Foundation
import PosternRuntime

/// What a command gets when it runs.
struct Invocation: Sendable {
    let arguments: ParsedArguments
    let commandPath: String
    let output: Output

    var json: Bool { arguments.flag("json") }
    var unsafeLogging: Bool { arguments.flag("unsafe-logging") }
    var paths: PosternPaths { PosternPaths(configDirectoryOverride: arguments.value("config-dir")) }

    func usageError(_ message: String) -> UsageError { UsageError(message, command: commandPath) }

    /// A result on standard output: as JSON with --json, else its text form.
    func render(_ value: some Encodable, text: @autoclosure () -> String) throws {
        if json {
            try output.json(value)
        } else {
            output.print(text())
        }
    }
}

/// A command or a group of subcommands. Every command answers `--help`.
struct Command: Sendable {
    let name: String
    let summary: String
    /// The synopsis after the command path, e.g. "[--json]".
    let synopsis: String
    let details: String
    let options: [OptionSpec]
    let subcommands: [Command]
    let run: (@Sendable (Invocation) async throws -> Int32)?

    init(name: String, summary: String, synopsis: String = "", details: String = "", options: [OptionSpec] = [],
         subcommands: [Command] = [], run: (@Sendable (Invocation) async throws -> Int32)? = nil) {
        self.name = name
        self.summary = summary
        self.synopsis = synopsis
        self.details = details
        self.options = options
        self.subcommands = subcommands
        self.run = run
    }

    static let globalOptions: [OptionSpec] = [
        .flag("help", short: "h", "show help for this command"),
        .flag("version", "show the version"),
        .value("config-dir", "DIR", "settings directory (default: $POSTERN_CONFIG_DIR or $XDG_CONFIG_HOME/postern)"),
        .flag("unsafe-logging", "show bridge addresses, fingerprints and certs in logs and errors"),
    ]

    func help(path: String) -> String {
        var text = "\(summary)\n\nUsage: \(path)"
        if !subcommands.isEmpty { text += run == nil ? " <command>" : " [<command>]" }
        if !synopsis.isEmpty { text += " \(synopsis)" }
        text += " [options]\n"
        if !details.isEmpty { text += "\n\(details)\n" }
        if !subcommands.isEmpty {
            text += "\nCommands:\n"
            let width = subcommands.map(\.name.count).max() ?? 0
            for sub in subcommands {
                text += "  \(sub.name.padding(toLength: width, withPad: " ", startingAt: 0))  \(sub.summary)\n"
            }
            text += "\nRun '\(path) <command> --help' for a command's options.\n"
        }
        let all = options + Self.globalOptions
        text += "\nOptions:\n"
        let rendered = all.map { option -> (String, String) in
            var left = option.short.map { "-\($0), " } ?? "    "
            left += "--\(option.name)"
            if let valueName = option.valueName { left += " \(valueName)" }
            if option.repeatable { left += " (repeatable)" }
            return (left, option.help)
        }
        let width = rendered.map(\.0.count).max() ?? 0
        for (left, help) in rendered {
            text += "  \(left.padding(toLength: width, withPad: " ", startingAt: 0))  \(help)\n"
        }
        return text
    }
}

/// Walks argv down the command tree, handles --help/--version, and maps errors to exit codes:
/// 0 success, 1 failure, 64 usage error.
enum Dispatcher {
    static func main(root: Command, arguments: [String], output: Output) async -> Int32 {
        var command = root
        var path = root.name
        var rest = arguments[...]
        // Global options may come before the command ("postern --config-dir D bridges list"); they
        // are moved behind it and parsed with the command's own options.
        var globals: [String] = []
        while let next = rest.first, next.hasPrefix("--"), !command.subcommands.isEmpty {
            let name = String(next.dropFirst(2).prefix { $0 != "=" })
            guard let option = Command.globalOptions.first(where: { $0.name == name }), option.name != "help",
                  option.name != "version" else { break }
            globals.append(next)
            rest = rest.dropFirst()
            if option.valueName != nil, !next.contains("="), let value = rest.first {
                globals.append(value)
                rest = rest.dropFirst()
            }
        }
        while let next = rest.first, !next.hasPrefix("-"), !command.subcommands.isEmpty {
            guard let sub = command.subcommands.first(where: { $0.name == next }) else {
                // A command that runs itself with arguments (its synopsis names them) and also has
                // subcommands (`ab ROUTE...` and `ab history`) takes other words as its arguments.
                if command.run != nil && !command.synopsis.isEmpty { break }
                output.error("\(path): unknown command '\(next)'")
                output.error("Run '\(path) --help' for the list of commands.")
                return 64
            }
            command = sub
            path += " \(sub.name)"
            rest = rest.dropFirst()
        }
        let parsed: ParsedArguments
        do {
            parsed = try ArgumentParser.parse(Array(rest) + globals, options: command.options + Command.globalOptions, command: path)
        } catch {
            output.error("\(error.command): \(error.message)")
            output.error("Run '\(error.command) --help' for usage.")
            return 64
        }
        if parsed.flag("help") {
            output.print(command.help(path: path), terminator: "")
            return 0
        }
        if parsed.flag("version") {
            output.print("postern \(PosternVersion.string) (\(PosternVersion.torCore))")
            return 0
        }
        guard let run = command.run else {
            if let word = parsed.positionals.first {
                output.error("\(path): unknown command '\(word)'")
            } else {
                output.error("\(path): a command is required")
            }
            output.error("Run '\(path) --help' for the list of commands.")
            return 64
        }
        do {
            return try await run(Invocation(arguments: parsed, commandPath: path, output: output))
        } catch let error as UsageError {
            output.error("\(error.command): \(error.message)")
            output.error("Run '\(error.command) --help' for usage.")
            return 64
        } catch {
            output.error("\(path): error: \(error)")
            return 1
        }
    }
}
