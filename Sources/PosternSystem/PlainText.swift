/// Plain-text forms shared by the libraries' text renderings of their results (the CLI prints
/// them; an app may show or log them): padded tables, counted nouns, and text from outside with
/// its control characters made visible.
public enum PlainText {
    /// Columns padded to their widest cell, separated by two spaces, the last one left ragged.
    public static func table(header: [String], rows: [[String]]) -> String {
        let all = [header] + rows
        let columns = all.map(\.count).max() ?? 0
        var widths = [Int](repeating: 0, count: columns)
        for row in all {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        return all.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[index] - cell.count)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    /// "1 bridge", "2 bridges"; `pluralForm` where adding "s" is wrong.
    public static func counted(_ count: Int, _ singular: String, _ pluralForm: String? = nil) -> String {
        "\(count) \(count == 1 ? singular : pluralForm ?? singular + "s")"
    }

    /// A number as "60", "2.5" or "0.25": whole numbers without a fraction, others in Swift's
    /// shortest form, never grouped. For seconds and limits in messages. Not `Double.formatted()`:
    /// that is Foundation's locale-aware formatting, which opens ICU's number formatter and reads
    /// locale data, megabytes of resident memory in `postern run` (docs/PERFORMANCE.md, Memory).
    public static func number(_ value: Double) -> String {
        if value.isFinite, value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// A duration in whole milliseconds, "312 ms", for the transports' "connected in" events
    /// (formerly `Duration.formatted(.units(allowed: [.milliseconds]))`; see ``number(_:)`` for
    /// why not).
    public static func milliseconds(_ duration: Duration) -> String {
        "\(number((duration.seconds * 1000).rounded())) ms"
    }

    /// `text` right-aligned in `width` characters (never cut).
    public static func leftPadded(_ text: String, to width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }

    /// `text` with every character that could steer a terminal or change how the text around it
    /// reads made visible: C0 controls, DEL and C1 controls (an ESC that would start a colour, a
    /// title or a screen clear; a newline that would start a line that looks like our own) as
    /// `\n`, `\r`, `\t` or `\u{1B}`, and the bidirectional formatting characters and the line
    /// and paragraph separators as `\u{202E}`. Everything else is kept.
    ///
    /// For text from outside (a peer, a relay, a broker, a downloaded file, a paste) before it
    /// reaches a terminal, a log or an error message. The form is for reading, not for parsing
    /// back: a backslash is kept as it is.
    public static func visible(_ text: String) -> String {
        guard containsControlCharacters(text) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where isControlCharacter(scalar): out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Whether `text` holds a character ``visible(_:)`` would change.
    public static func containsControlCharacters(_ text: String) -> Bool {
        text.unicodeScalars.contains(where: isControlCharacter)
    }

    /// C0 (U+0000–U+001F), DEL, C1 (U+0080–U+009F), the bidirectional marks, embeddings,
    /// overrides and isolates (which can make text display in an order other than its own), and
    /// U+2028/U+2029 (which some viewers break lines at).
    public static func isControlCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        case 0x2028, 0x2029: true
        default: false
        }
    }
}
