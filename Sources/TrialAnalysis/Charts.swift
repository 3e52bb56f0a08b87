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

    /// The axis runs from 0 to a "nice" value at or above the largest value.
    public static func axisMaximum(_ groups: [Group]) -> Double {
        let largest = groups.flatMap(\.values).max() ?? 1
        guard largest > 0 else { return 1 }
        let magnitude = pow(10, (log10(largest)).rounded(.down))
        for step in [1.0, 2, 2.5, 5, 10] where step * magnitude >= largest { return step * magnitude }
        return 10 * magnitude
    }

    /// The vertical pixel position of `value` on an axis from 0 to `maximum` in a single chart.
    public static func y(_ value: Double, maximum: Double) -> Double {
        y(value, maximum: maximum, frame: Frame(left: 15, width: 620, top: 10))
    }

    /// One chart of a small-multiples figure: its own title, axis and groups.
    public struct Panel: Sendable {
        /// A stable name for the panel (`data-figure` in the SVG), e.g. "bootstrap".
        public var id: String
        public var title: String
        public var axisLabel: String
        public var groups: [Group]

        public init(id: String, title: String, axisLabel: String, groups: [Group]) {
            self.id = id
            self.title = title
            self.axisLabel = axisLabel
            self.groups = groups
        }
    }

    /// A horizontal placement of a plot inside a larger document.
    struct Frame {
        var left: Double
        var width: Double
        var top: Double
        var plotLeft: Double { left + 55 }
        var plotRight: Double { left + width - 15 }
        var plotTop: Double { top + 40 }
        var plotBottom: Double { top + 320 }
    }

    public static func render(title: String, axisLabel: String, groups: [Group]) -> String {
        var svg = header(width: width, height: height)
        svg += "<text x=\"\(format(width / 2))\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">\(escape(title))</text>\n"
        svg += plot(axisLabel: axisLabel, groups: groups, frame: Frame(left: 15, width: 620, top: 10))
        return svg + "</svg>\n"
    }

    static func header(width: Double, height: Double) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <svg xmlns="http://www.w3.org/2000/svg" width="\(format(width))" height="\(format(height))" viewBox="0 0 \(format(width)) \(format(height))" font-family="sans-serif" font-size="12">
        <rect width="100%" height="100%" fill="white"/>

        """
    }

    /// The y position of `value` inside `frame` on an axis from 0 to `maximum`.
    static func y(_ value: Double, maximum: Double, frame: Frame) -> Double {
        frame.plotBottom - (frame.plotBottom - frame.plotTop) * min(max(value / maximum, 0), 1)
    }

    /// The axis, ticks, labels and boxes of one plot, without the document around it.
    static func plot(axisLabel: String, groups: [Group], frame: Frame) -> String {
        let maximum = axisMaximum(groups)
        let plotLeft = frame.plotLeft, plotRight = frame.plotRight, plotTop = frame.plotTop, plotBottom = frame.plotBottom
        let middle = (plotTop + plotBottom) / 2
        var svg = "<text x=\"\(format(frame.left + 8))\" y=\"\(format(middle))\" text-anchor=\"middle\" transform=\"rotate(-90 \(format(frame.left + 8)) \(format(middle)))\">\(escape(axisLabel))</text>\n"
        // Axis with five ticks.
        svg += "<line x1=\"\(format(plotLeft))\" y1=\"\(format(plotTop))\" x2=\"\(format(plotLeft))\" y2=\"\(format(plotBottom))\" stroke=\"black\"/>\n"
        for tick in 0...5 {
            let value = maximum * Double(tick) / 5
            let tickY = y(value, maximum: maximum, frame: frame)
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
                svg += "<text x=\"\(format(center))\" y=\"\(format(middle))\" text-anchor=\"middle\" fill=\"#a00\">no data</text>\n"
                continue
            }
            let left = center - boxWidth / 2, right = center + boxWidth / 2
            let q1 = y(box.firstQuartile, maximum: maximum, frame: frame), q3 = y(box.thirdQuartile, maximum: maximum, frame: frame)
            svg += "<g class=\"box\" data-label=\"\(escape(group.label))\">\n"
            svg += "<line x1=\"\(format(center))\" y1=\"\(format(y(box.lowerWhisker, maximum: maximum, frame: frame)))\" x2=\"\(format(center))\" y2=\"\(format(q1))\" stroke=\"black\"/>\n"
            svg += "<line x1=\"\(format(center))\" y1=\"\(format(q3))\" x2=\"\(format(center))\" y2=\"\(format(y(box.upperWhisker, maximum: maximum, frame: frame)))\" stroke=\"black\"/>\n"
            for whisker in [box.lowerWhisker, box.upperWhisker] {
                let whiskerY = y(whisker, maximum: maximum, frame: frame)
                svg += "<line x1=\"\(format(center - boxWidth / 4))\" y1=\"\(format(whiskerY))\" x2=\"\(format(center + boxWidth / 4))\" y2=\"\(format(whiskerY))\" stroke=\"black\"/>\n"
            }
            svg += "<rect x=\"\(format(left))\" y=\"\(format(q3))\" width=\"\(format(boxWidth))\" height=\"\(format(max(q1 - q3, 1)))\" fill=\"\(boxFill)\" stroke=\"black\"/>\n"
            let medianY = y(box.median, maximum: maximum, frame: frame)
            svg += "<line class=\"median\" x1=\"\(format(left))\" y1=\"\(format(medianY))\" x2=\"\(format(right))\" y2=\"\(format(medianY))\" stroke=\"\(medianStroke)\" stroke-width=\"2\"/>\n"
            for value in group.values {
                svg += "<circle cx=\"\(format(center + boxWidth * 0.6))\" cy=\"\(format(y(value, maximum: maximum, frame: frame)))\" r=\"2.5\" fill=\"#333\"><title>\(format(value))</title></circle>\n"
            }
            svg += "</g>\n"
        }
        return svg
    }

    /// The colours of a box and its median line (tests look for them in the rendered picture).
    public static let boxFill = "#9cc3e6"
    public static let medianStroke = "#c00"

    /// Two decimals at most, whole numbers without ".0". The values come from a saved run, which
    /// anyone can edit: `Int(exactly:)` is nil past Int's range and for infinities and NaN (where
    /// `Int(_:)` traps), and those print as Double does.
    static func format(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        if let whole = Int(exactly: rounded) { return String(whole) }
        return String(rounded)
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

/// Small multiples: box plots of several figures side by side, each with its own axis, over the
/// same groups (e.g. time to 100 %, probe first byte and throughput by route). Each panel is a
/// `<g class="panel" data-figure="ID">`.
public enum SmallMultiplesSVG {
    public static let panelWidth = 400.0
    public static let height = 400.0

    public static func render(title: String, panels: [BoxPlotSVG.Panel]) -> String {
        let width = panelWidth * Double(max(panels.count, 1))
        var svg = BoxPlotSVG.header(width: width, height: height)
        svg += "<text x=\"\(BoxPlotSVG.format(width / 2))\" y=\"20\" text-anchor=\"middle\" font-size=\"15\">\(BoxPlotSVG.escape(title))</text>\n"
        for (index, panel) in panels.enumerated() {
            let frame = BoxPlotSVG.Frame(left: panelWidth * Double(index), width: panelWidth, top: 30)
            svg += "<g class=\"panel\" data-figure=\"\(BoxPlotSVG.escape(panel.id))\">\n"
            svg += "<text x=\"\(BoxPlotSVG.format(frame.left + panelWidth / 2))\" y=\"\(BoxPlotSVG.format(frame.top + 20))\" text-anchor=\"middle\" font-size=\"14\">\(BoxPlotSVG.escape(panel.title))</text>\n"
            svg += BoxPlotSVG.plot(axisLabel: panel.axisLabel, groups: panel.groups, frame: frame)
            svg += "</g>\n"
        }
        return svg + "</svg>\n"
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
            // Halved, the differences of finite values cannot overflow to infinity (a range from
            // -1e308 to 1e308 would make the fraction ∞/∞ = NaN); halving is exact above the subnormals,
            // so the fraction is the same as without it. A NaN from a non-finite value gets the middle block.
            let fraction = min(max((value / 2 - low / 2) / (high / 2 - low / 2), 0), 1)
            guard !fraction.isNaN else { return blocks[blocks.count / 2] }
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
