/// A small command-line parser: long options (`--name`, `--name value`, `--name=value`), short
/// aliases, flags, repeatable options and positionals. No outside dependency can be fetched here,
/// so this stays deliberately small.

struct OptionSpec: Sendable {
    let name: String
    let short: Character?
    /// Nil for a flag; otherwise the placeholder shown in help, e.g. "PORT".
    let valueName: String?
    let help: String
    let repeatable: Bool

    static func flag(_ name: String, short: Character? = nil, _ help: String) -> OptionSpec {
        OptionSpec(name: name, short: short, valueName: nil, help: help, repeatable: false)
    }

    static func value(_ name: String, _ valueName: String, short: Character? = nil, repeatable: Bool = false,
                      _ help: String) -> OptionSpec {
        OptionSpec(name: name, short: short, valueName: valueName, help: help, repeatable: repeatable)
    }
}

/// A usage error: printed to stderr with a hint, exit status 64.
struct UsageError: Error, CustomStringConvertible {
    let message: String
    let command: String
    init(_ message: String, command: String = "postern") {
        self.message = message
        self.command = command
    }
    var description: String { message }
}

/// A failure while doing what was asked: printed to stderr, exit status 1.
struct CommandFailure: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

struct ParsedArguments: Sendable {
    var flags: Set<String> = []
    var values: [String: [String]] = [:]
    var positionals: [String] = []

    func flag(_ name: String) -> Bool { flags.contains(name) }
    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
}

enum ArgumentParser {
    static func parse(_ arguments: [String], options: [OptionSpec], command: String) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments()
        var index = 0
        var onlyPositionals = false
        func spec(named name: String) throws(UsageError) -> OptionSpec {
            guard let spec = options.first(where: { $0.name == name }) else {
                throw UsageError("unknown option '--\(name)'", command: command)
            }
            return spec
        }
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositionals || argument == "-" || !argument.hasPrefix("-") {
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" {
                onlyPositionals = true
                continue
            }
            var name: String
            var inlineValue: String?
            if argument.hasPrefix("--") {
                name = String(argument.dropFirst(2))
                if let equals = name.firstIndex(of: "=") {
                    inlineValue = String(name[name.index(after: equals)...])
                    name = String(name[..<equals])
                }
            } else {
                guard argument.count == 2, let short = argument.last,
                      let match = options.first(where: { $0.short == short }) else {
                    throw UsageError("unknown option '\(argument)'", command: command)
                }
                name = match.name
            }
            let option = try spec(named: name)
            if option.valueName == nil {
                if inlineValue != nil { throw UsageError("option '--\(name)' takes no value", command: command) }
                parsed.flags.insert(name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                guard index < arguments.count else {
                    throw UsageError("option '--\(name)' needs a value (\(option.valueName!))", command: command)
                }
                value = arguments[index]
                index += 1
            }
            if !option.repeatable, parsed.values[name] != nil {
                throw UsageError("option '--\(name)' given more than once", command: command)
            }
            parsed.values[name, default: []].append(value)
        }
        return parsed
    }
}
