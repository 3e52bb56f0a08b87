/// Plain-text forms shared by the libraries' text renderings of their results (the CLI prints
/// them; an app may show or log them): padded tables and counted nouns.
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

    /// `text` right-aligned in `width` characters (never cut).
    public static func leftPadded(_ text: String, to width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }
}
