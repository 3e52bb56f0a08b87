import Foundation

/// Box plots as a standalone SVG document: one box per group on a shared vertical axis (seconds),
/// the individual values drawn as dots over the box, and groups without values shown as "no data".
public enum BoxPlotSVG {
    public struct Group: Sendable {
        public var label: String
        public var values: [Double]
        /// A note under the label, e.g. "5/5 ok".
        public var note: String

        public init(label: String, values: [Double], note: String = "") {
            self.label = label
            self.values = values
            self.note = note
        }
    }

    public static let width = 640.0
    public static let height = 400.0
    static let plotTop = 50.0
    static let plotBottom = 330.0
    static let plotLeft = 70.0
    static let plotRight = 620.0

    /// The axis runs from 0 to a "nice" value at or above the largest value.
    public static func axisMaximum(_ groups: [Group]) -> Double {
        let largest = groups.flatMap(\.values).max() ?? 1
        guard largest > 0 else { return 1 }
        let magnitude = pow(10, (log10(largest)).rounded(.down))
        for step in [1.0, 2, 2.5, 5, 10] where step * magnitude >= largest { return step * magnitude }
        return 10 * magnitude
    }

    /// The vertical pixel position of `value` on an axis from 0 to `maximum`.
    public static func y(_ value: Double, maximum: Double) -> Double {
        plotBottom - (plotBottom - plotTop) * min(max(value / maximum, 0), 1)
    }

    public static func render(title: String, axisLabel: String, groups: [Group]) -> String {
        let maximum = axisMaximum(groups)
        var svg = """
        <?xml version="1.0" encoding="UTF-8"?>
        <svg xmlns="http://www.w3.org/2000/svg" width="\(format(width))" height="\(format(height))" viewBox="0 0 \(format(width)) \(format(height))" font-family="sans-serif" font-size="12">
        <rect width="100%" height="100%" fill="white"/>
        <text x="\(format(width / 2))" y="24" text-anchor="middle" font-size="15">\(escape(title))</text>
        <text x="16" y="\(format((plotTop + plotBottom) / 2))" text-anchor="middle" transform="rotate(-90 16 \(format((plotTop + plotBottom) / 2)))">\(escape(axisLabel))</text>

        """
        // Axis with five ticks.
        svg += "<line x1=\"\(format(plotLeft))\" y1=\"\(format(plotTop))\" x2=\"\(format(plotLeft))\" y2=\"\(format(plotBottom))\" stroke=\"black\"/>\n"
        for tick in 0...5 {
            let value = maximum * Double(tick) / 5
            let tickY = y(value, maximum: maximum)
            svg += "<line x1=\"\(format(plotLeft - 5))\" y1=\"\(format(tickY))\" x2=\"\(format(plotRight))\" y2=\"\(format(tickY))\" stroke=\"#ddd\"/>\n"
            svg += "<text x=\"\(format(plotLeft - 8))\" y=\"\(format(tickY + 4))\" text-anchor=\"end\">\(format(value))</text>\n"
        }
        let slot = (plotRight - plotLeft) / Double(max(groups.count, 1))
        let boxWidth = min(80, slot * 0.5)
        for (index, group) in groups.enumerated() {
            let center = plotLeft + slot * (Double(index) + 0.5)
            svg += "<text x=\"\(format(center))\" y=\"\(format(plotBottom + 20))\" text-anchor=\"middle\">\(escape(group.label))</text>\n"
            if !group.note.isEmpty {
                svg += "<text x=\"\(format(center))\" y=\"\(format(plotBottom + 36))\" text-anchor=\"middle\" fill=\"#555\">\(escape(group.note))</text>\n"
            }
            guard let box = Statistics.boxSummary(group.values) else {
                svg += "<text x=\"\(format(center))\" y=\"\(format((plotTop + plotBottom) / 2))\" text-anchor=\"middle\" fill=\"#a00\">no data</text>\n"
                continue
            }
            let left = center - boxWidth / 2, right = center + boxWidth / 2
            let q1 = y(box.firstQuartile, maximum: maximum), q3 = y(box.thirdQuartile, maximum: maximum)
            svg += "<g class=\"box\" data-label=\"\(escape(group.label))\">\n"
            svg += "<line x1=\"\(format(center))\" y1=\"\(format(y(box.lowerWhisker, maximum: maximum)))\" x2=\"\(format(center))\" y2=\"\(format(q1))\" stroke=\"black\"/>\n"
            svg += "<line x1=\"\(format(center))\" y1=\"\(format(q3))\" x2=\"\(format(center))\" y2=\"\(format(y(box.upperWhisker, maximum: maximum)))\" stroke=\"black\"/>\n"
            for whisker in [box.lowerWhisker, box.upperWhisker] {
                let whiskerY = y(whisker, maximum: maximum)
                svg += "<line x1=\"\(format(center - boxWidth / 4))\" y1=\"\(format(whiskerY))\" x2=\"\(format(center + boxWidth / 4))\" y2=\"\(format(whiskerY))\" stroke=\"black\"/>\n"
            }
            svg += "<rect x=\"\(format(left))\" y=\"\(format(q3))\" width=\"\(format(boxWidth))\" height=\"\(format(max(q1 - q3, 1)))\" fill=\"#9cc3e6\" stroke=\"black\"/>\n"
            let medianY = y(box.median, maximum: maximum)
            svg += "<line class=\"median\" x1=\"\(format(left))\" y1=\"\(format(medianY))\" x2=\"\(format(right))\" y2=\"\(format(medianY))\" stroke=\"#c00\" stroke-width=\"2\"/>\n"
            for value in group.values {
                svg += "<circle cx=\"\(format(center + boxWidth * 0.6))\" cy=\"\(format(y(value, maximum: maximum)))\" r=\"2.5\" fill=\"#333\"><title>\(format(value))</title></circle>\n"
            }
            svg += "</g>\n"
        }
        svg += "</svg>\n"
        return svg
    }

    static func format(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

/// One line of block characters, lowest value ▁, highest █, for a terminal.
public enum Sparkline {
    static let blocks: [Character] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]

    /// Scaled between `minimum` and `maximum` (default: the values' own range), so several lines
    /// can share one scale. Nil values (failed trials) are drawn as "·".
    public static func render(_ values: [Double?], minimum: Double? = nil, maximum: Double? = nil) -> String {
        let present = values.compactMap { $0 }
        let low = minimum ?? present.min() ?? 0
        let high = maximum ?? present.max() ?? 0
        return String(values.map { value -> Character in
            guard let value else { return "·" }
            guard high > low else { return blocks[blocks.count / 2] }
            let fraction = min(max((value - low) / (high - low), 0), 1)
            return blocks[Int((fraction * Double(blocks.count - 1)).rounded())]
        })
    }
}

/// Comma-separated values as RFC 4180 writes them: fields with a comma, quote or line break are
/// quoted, quotes doubled, lines ended with CRLF.
public enum CSV {
    public static func field(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    public static func render(header: [String], rows: [[String]]) -> String {
        ([header] + rows).map { $0.map(field).joined(separator: ",") + "\r\n" }.joined()
    }
}
