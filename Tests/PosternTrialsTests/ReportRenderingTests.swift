import Foundation
import PosternTestSupport
import Testing
@testable import PosternTrials

/// `postern ab report`'s page, checked as people see it: its charts rendered by a real SVG
/// renderer (Debian's rsvg-convert, librsvg) and the picture's pixels read back (Debian's
/// python3-pil), its text checked for the labels and marks that must be there.
@Suite struct ReportRenderingTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-report-\(UUID())")

    static let rsvgConvert = URL(fileURLWithPath: "/usr/bin/rsvg-convert")
    static let debianPython = URL(fileURLWithPath: "/usr/bin/python3")

    @Test func reportPageHasTheTableVerdictChartsAndHarnessErrors() async throws {
        let result = Fixtures.threeRoutes(network: "test-bed", harnessErrors: [
            Fixtures.harnessError(trial: 1, route: "obfs4", try: 1, retried: true)])
        let html = ABReport.html(result)
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        // Self-contained: no scripts, no links to other files.
        for outside in ["<script", "src=", "<link", "@import", "url("] { #expect(!html.contains(outside), "\(outside)") }
        for label in ["<table class=\"routes\">", "broke after 100%", "harness errors", "<tr data-route=\"obfs4\">",
                      "<tr data-route=\"snowflake\">", "<tr data-route=\"direct\">", "network test-bed", "child-configuration", "retried",
                      "Best here: obfs4", "<svg", "data-figure=\"throughput\"", "Time to 100%"] {
            #expect(html.contains(label), "the page lacks \(label)")
        }
        // The snowflake row: 4 of 5 through, 1 of 5 broke after 100%.
        #expect(html.contains("<tr data-route=\"snowflake\"><td>snowflake</td><td>4/5</td><td>80%</td><td>5</td><td>1</td><td>0</td>"))
    }

    @Test func chartsRenderWithABoxAndAMedianPerRouteAndPanel() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.rsvgConvert.path), "rsvg-convert missing: scripts/install-deps.sh installs librsvg2-bin")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let html = ABReport.html(Fixtures.threeRoutes())
        // The chart as the page holds it.
        let start = try #require(html.range(of: "<svg")), end = try #require(html.range(of: "</svg>"))
        let svgFile = directory.appendingPathComponent("charts.svg"), png = directory.appendingPathComponent("charts.png")
        try String(html[start.lowerBound..<end.upperBound]).write(to: svgFile, atomically: true, encoding: .utf8)
        let render = try await ProcessRunner.run(Self.rsvgConvert, ["--format", "png", "--output", png.path, svgFile.path])
        try #require(render.status == 0, "rsvg-convert: \(render.stderr)")

        // Per panel (400 px wide) and route column (110 px from 55 px in), the pixels of the box fill
        // and of the median line.
        let script = """
        import sys
        from PIL import Image
        image = Image.open(sys.argv[1]).convert("RGB")
        width, height = image.size
        print("size", width, height)
        def near(pixel, color): return all(abs(a - b) <= 12 for a, b in zip(pixel, color))
        for panel in range(3):
            for column, route in enumerate(["obfs4", "snowflake", "direct"]):
                center = 400 * panel + 55 + 110 * column + 55
                fill = median = 0
                for x in range(center - 45, center + 46):
                    for y in range(0, height):
                        pixel = image.getpixel((x, y))
                        if near(pixel, (0x9c, 0xc3, 0xe6)): fill += 1
                        if near(pixel, (0xcc, 0x00, 0x00)): median += 1
                print(panel, route, fill, median)
        """
        let pixels = try await ProcessRunner.run(Self.debianPython, ["-c", script, png.path])
        try #require(pixels.status == 0, "python3-pil: \(pixels.stderr)")
        let lines = pixels.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(lines.first == ["size", "1200", "400"], "\(pixels.stdout)")
        var counts: [String: (fill: Int, median: Int)] = [:]
        for line in lines.dropFirst() where line.count == 4 {
            counts["\(line[0])/\(line[1])"] = (Int(line[2]) ?? -1, Int(line[3]) ?? -1)
        }
        for panel in 0..<3 {
            for route in ["obfs4", "snowflake"] {
                let count = try #require(counts["\(panel)/\(route)"])
                #expect(count.fill > 50, "panel \(panel): \(route)'s box is drawn (\(count.fill) px)")
                #expect(count.median > 20, "panel \(panel): \(route)'s median line is drawn (\(count.median) px)")
            }
            let direct = try #require(counts["\(panel)/direct"])
            #expect(direct.fill == 0 && direct.median == 0, "panel \(panel): direct has no data, so no box: \(direct)")
        }
    }
}
