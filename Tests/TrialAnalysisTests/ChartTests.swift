import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing
@testable import TrialAnalysis

struct ChartTests {
    /// Counts elements by name while checking that the document parses as XML.
    final class ElementCounter: NSObject, XMLParserDelegate {
        var counts: [String: Int] = [:]
        var medianYs: [Double] = []
        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            counts[name, default: 0] += 1
            if name == "line", attributes["class"] == "median", let y = attributes["y1"].flatMap(Double.init) {
                medianYs.append(y)
            }
        }
    }

    @Test func boxPlotIsWellFormedSVGWithOneBoxPerGroup() throws {
        let groups = [
            BoxPlotSVG.Group(label: "obfs4", values: [3.1, 3.4, 2.9, 4.2, 3.3], note: "5/5 ok"),
            BoxPlotSVG.Group(label: "snow<flake>", values: [8.2, 7.9, 9.5, 8.0, 12.1]),
            BoxPlotSVG.Group(label: "direct", values: [], note: "0/5 ok"),
        ]
        let svg = BoxPlotSVG.render(title: "Time to 100% & more", axisLabel: "seconds", groups: groups)
        let parser = XMLParser(data: Data(svg.utf8))
        let counter = ElementCounter()
        parser.delegate = counter
        #expect(parser.parse(), "not well-formed: \(String(describing: parser.parserError))")
        #expect(counter.counts["svg"] == 1)
        #expect(counter.counts["g"] == 2, "a box for each group with data")
        #expect(counter.counts["circle"] == 10, "a dot per value")
        #expect(svg.contains("no data"))
        #expect(svg.contains("snow&lt;flake&gt;") && svg.contains("100% &amp; more"))
        // Axis 0…20 (the next nice value above 12.1: 1, 2, 2.5 or 5 times a power of ten); medians 3.3 and 8.2 at their pixel heights.
        #expect(BoxPlotSVG.axisMaximum(groups) == 20)
        #expect(counter.medianYs.count == 2)
        #expect(abs(counter.medianYs[0] - BoxPlotSVG.y(3.3, maximum: 20)) < 0.01)
        #expect(abs(counter.medianYs[1] - BoxPlotSVG.y(8.2, maximum: 20)) < 0.01)
        #expect(counter.medianYs[0] > counter.medianYs[1], "the faster route's median is drawn lower")
    }

    @Test func axisMaximumIsANiceNumber() {
        #expect(BoxPlotSVG.axisMaximum([.init(label: "a", values: [0.7])]) == 1)
        #expect(BoxPlotSVG.axisMaximum([.init(label: "a", values: [3])]) == 5)
        #expect(BoxPlotSVG.axisMaximum([.init(label: "a", values: [21])]) == 25)
        #expect(BoxPlotSVG.axisMaximum([.init(label: "a", values: [])]) == 1)
    }

    @Test func sparklineScalesBetweenBlocks() {
        #expect(Sparkline.render([1, 2, 3, 4, 5, 6, 7, 8]) == "▁▂▃▄▅▆▇█")
        #expect(Sparkline.render([0, nil, 10]) == "▁·█")
        #expect(Sparkline.render([5, 5]) == "▅▅")
        #expect(Sparkline.render([5], minimum: 0, maximum: 10) == "▅")
        #expect(Sparkline.render([]) == "")
    }

    /// A saved run is a file anyone can edit: numbers past Int's range, or a range wider than the
    /// largest Double, once reached `Int(_:)` and trapped `postern ab report`.
    @Test func extremeNumbersRenderWithoutTrapping() {
        #expect(BoxPlotSVG.format(3) == "3")
        #expect(BoxPlotSVG.format(2.25) == "2.25")
        #expect(BoxPlotSVG.format(1e300) == "1e+300")
        #expect(BoxPlotSVG.format(-9.3e18) == "-9.3e+18")
        #expect(BoxPlotSVG.format(.infinity) == "inf")
        #expect(BoxPlotSVG.format(.nan) == "nan")
        let svg = BoxPlotSVG.render(title: "t", axisLabel: "MiB/s", groups: [.init(label: "a", values: [1e300, 1.7e308, -1.7e308])])
        #expect(svg.contains("<title>1e+300</title>"))
        #expect(Sparkline.render([-1.7e308, 0, 1.7e308, nil]) == "▁▅█·")
        #expect(Sparkline.render([.nan, .infinity], minimum: 0, maximum: 10) == "▅█")
    }

    @Test func csvQuotesOnlyWhatNeedsIt() {
        let text = CSV.render(header: ["route", "reason"], rows: [["obfs4", ""], ["direct", "stalled at 5% (conn), \"no route\""]])
        #expect(text == "route,reason\r\nobfs4,\r\ndirect,\"stalled at 5% (conn), \"\"no route\"\"\"\r\n")
        #expect(CSV.field("a\nb") == "\"a\nb\"")
    }
}
