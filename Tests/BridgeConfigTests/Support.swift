import Foundation
import PosternLinkSpec
import PosternRuntime
import Testing
@testable import BridgeConfig

/// The rulebook these tests parse with: Postern's own (PosternRuntime's `Transports.argumentRules`),
/// so the golden corpus and the store tests check each transport's argument rules as the CLI does.
let posternRules = Transports.argumentRules

// The entry points with Postern's rulebook filled in, so the test bodies read as before the rules
// moved into the transport modules (tests of a rulebook pass one explicitly).
extension BridgeLine {
    init(validating text: String, logging: LoggingPolicy = .safe) throws(BridgeLineError) {
        try self.init(validating: text, rules: posternRules, logging: logging)
    }

    static func parse(_ text: String, logging: LoggingPolicy = .safe) throws(BridgeLineError) -> Parsed {
        try parse(text, rules: posternRules, logging: logging)
    }
}

extension BridgePaste {
    static func parse(_ text: String, logging: LoggingPolicy = .safe) -> BridgePaste {
        parse(text, rules: posternRules, logging: logging)
    }
}

extension BridgeStore {
    init(directory: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment) throws(BridgeConfigError) {
        try self.init(directory: directory, rules: posternRules, environment: environment)
    }
}

extension BuiltinBridges {
    static func bundled() throws(BridgeConfigError) -> BuiltinBridges { try bundled(rules: posternRules) }
}

enum Corpus {
    static var directory: URL {
        Bundle.module.url(forResource: "Corpus", withExtension: nil)!
    }

    /// The source-tree copy, where `POSTERN_RECORD_GOLDEN=1` writes new `.expected` files.
    static var sourceDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Corpus")
    }

    static var caseNames: [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".txt") }.map { String($0.dropLast(4)) }.sorted()
    }

    static func input(_ name: String) throws -> String {
        // Read as bytes: String(contentsOf:) must not be given a chance to normalize line endings.
        String(decoding: try Data(contentsOf: directory.appendingPathComponent(name + ".txt")), as: UTF8.self)
    }

    static func expected(_ name: String) throws -> String {
        String(decoding: try Data(contentsOf: directory.appendingPathComponent(name + ".expected")), as: UTF8.self)
    }
}

/// The golden form of a paste result: one line per accepted bridge (canonical, unscrubbed: this is
/// the test's own rendering, not library output meant for logs), then the messages exactly as the
/// library produced them under safe logging.
func goldenRendering(_ paste: BridgePaste) -> String {
    var lines: [String] = []
    for accepted in paste.accepted { lines.append("accepted \(accepted.location): \(accepted.line)") }
    for error in paste.rejected { lines.append("rejected [\(error.code)]: \(error.message)") }
    for warning in paste.warnings { lines.append("warning [\(warning.code)]: \(warning.message)") }
    for note in paste.notes { lines.append("note [\(note.code)]: \(note.message)") }
    for offer in paste.pluginOffers {
        lines.append("plugin offered \(offer.location): \(offer.plugin.names.map(\.rawValue).joined(separator: ",")) exec \(offer.plugin.executable)"
                     + offer.plugin.arguments.map { " \($0)" }.joined())
    }
    if lines.isEmpty { lines.append("(nothing)") }
    return lines.joined(separator: "\n") + "\n"
}

/// Words of `input` that could be secrets: anything with a digit or a dot that is at least six
/// characters long, or any long word (certs, keys). Split on the separators a message could cut
/// a value at, so a value is caught even if only its `key=value` part would be echoed.
func secretLookingTokens(in input: String) -> Set<String> {
    let separators = CharacterSet.whitespacesAndNewlines.union(CharacterSet(charactersIn: "\"'=,[]\u{201C}\u{201D}"))
    let harmless: Set<String> = ["hellorandomizedalpn", "HelloRandomizedALPN", "hellochrome_auto", "hellochrome_999",
                                 "hellorandomizedalpn\"", "/usr/bin/obfs4proxy", "/usr/bin/snowflake-client",
                                 "ClientTransportPlugin", "2026-11", "0.0.1", "0.0.2"]
    var tokens = Set<String>()
    for token in input.components(separatedBy: separators) where !harmless.contains(token) {
        let hasDigitOrDot = token.contains { $0.isNumber || $0 == "." }
        if (hasDigitOrDot && token.count >= 6) || token.count >= 20 { tokens.insert(token) }
    }
    return tokens
}

func allMessages(_ paste: BridgePaste) -> [String] {
    paste.rejected.map(\.message) + paste.warnings.map(\.message) + paste.notes.map(\.message)
}
