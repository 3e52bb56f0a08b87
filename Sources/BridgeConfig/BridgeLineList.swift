import Foundation
import PosternLinkSpec

/// A list of bridge lines as a file holds them (`postern run --bridges-file`, a replacement for
/// the built-in list): one a line, ending in LF, CRLF or CR; blank lines, comments (`#`, `//`)
/// and a leading `Bridge ` are skipped. Unlike a paste (``BridgePaste``), a list is taken whole
/// or not at all.
public enum BridgeLineList {
    /// The lines that hold a bridge, trimmed and without `Bridge `, with their 1-based numbers.
    public static func numberedLines(in text: String) -> [(number: Int, text: String)] {
        // As a paste is read (``BridgePaste``): CRLF or CR line ends, a leading byte order mark.
        var normalized = text.replacingAll("\r\n", with: "\n").replacingAll("\r", with: "\n")
        if normalized.hasPrefix("\u{FEFF}") { normalized.removeFirst() }
        var lines: [(number: Int, text: String)] = []
        for (index, raw) in normalized.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix("//") { continue }
            if line.hasPrefix("Bridge ") { line = String(line.dropFirst("Bridge ".count)).trimmingCharacters(in: .whitespaces) }
            lines.append((index + 1, line))
        }
        return lines
    }

    /// Every bridge line of `text`, checked by `rules`. The first bad line is the error; its
    /// message starts with "line N: " and its ``BridgeConfigError/location`` names the line.
    public static func parse(_ text: String, rules: BridgeArgumentRulebook, logging: LoggingPolicy = .safe) throws(BridgeConfigError) -> [BridgeLine] {
        var lines: [BridgeLine] = []
        for (number, line) in numberedLines(in: text) {
            do {
                lines.append(try BridgeLine.parse(line, rules: rules, logging: logging).line)
            } catch {
                throw BridgeConfigError(error).located(at: PasteLocation(line: number))
            }
        }
        return lines
    }
}

extension BuiltinBridges {
    /// A list that replaces the bundled one (private networks, tests): `data` is a JSON object in
    /// the bundled resource's format, or else a bridge line list (``BridgeLineList``, whose
    /// errors carry a ``BridgeConfigError/location``). `source` says where the lines came from.
    public init(listData data: Data, source: String, rules: BridgeArgumentRulebook) throws(BridgeConfigError) {
        // A byte order mark before the JSON is an editor's doing, not a bridge line.
        let json = data.starts(with: [0xEF, 0xBB, 0xBF]) ? data.dropFirst(3) : data[...]
        if json.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) == UInt8(ascii: "{") {
            self = try BuiltinBridges(jsonData: Data(json), rules: rules)
        } else {
            self = BuiltinBridges(source: source, lines: try BridgeLineList.parse(String(decoding: data, as: UTF8.self), rules: rules))
        }
    }
}
