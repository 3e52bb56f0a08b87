import Foundation
import TrialAnalysis

/// `postern ab report DIR`: one self-contained HTML page for a saved run (no scripts, no external
/// files or fonts): the per-route table, the verdict, the charts inline as SVG, the harness errors
/// apart, and every trial.
public enum ABReport {
    public static func html(_ result: ABResult) -> String {
        var page = """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <title>postern ab \(escape(result.id))</title>
        <style>
        body { font-family: sans-serif; margin: 2em; color: #222; }
        table { border-collapse: collapse; margin: 1em 0; }
        th, td { border: 1px solid #bbb; padding: 4px 8px; text-align: right; }
        th:first-child, td:first-child { text-align: left; }
        td.failed { color: #a00; }
        td.harness { color: #a60; }
        .note { color: #555; }
        </style>
        </head>
        <body>
        <h1>A/B trials: \(escape(result.routes.joined(separator: ", ")))</h1>

        """
        var facts = ["run \(result.id)", "\(result.trialsPerRoute) trials per route", "\(result.parallel) at a time", "\(result.order) order",
                     "seed \(result.seed)"]
        if let network = result.network { facts.insert("network \(network)", at: 0) }
        if result.warm { facts.append("warm starts") }
        if let probe = result.probeURL { facts.append("probe \(probe) (\(result.probeBytes) bytes)") }
        page += "<p class=\"note\">\(escape(facts.joined(separator: " · ")))</p>\n"
        page += routeTable(result.summaries)
        page += "<h2>Verdict</h2>\n<ul class=\"verdict\">\n"
        for line in result.verdict { page += "<li>\(escape(line))</li>\n" }
        page += "</ul>\n<h2>Charts</h2>\n<div class=\"charts\">\n"
        page += inlineSVG(result.svg)
        page += "</div>\n<h2>Harness errors</h2>\n"
        page += harnessTable(result.harnessErrors)
        page += "<h2>Trials</h2>\n"
        page += trialTable(result.trials)
        page += "</body>\n</html>\n"
        return page
    }

    /// The per-route table (also used for each network of a merge).
    public static func routeTable(_ summaries: [ABResult.RouteSummary]) -> String {
        func pair(_ figure: ABResult.Figure, scale: Double = 1) -> String {
            guard let median = figure.median, let p90 = figure.p90 else { return "-" }
            return String(format: "%.2f / %.2f", median / scale, p90 / scale)
        }
        var table = "<table class=\"routes\">\n<tr><th>route</th><th>ok</th><th>rate</th><th>reached 100%</th><th>broke after 100%</th>"
        table += "<th>harness errors</th><th>first byte s (med/p90)</th><th>100% s (med/p90)</th><th>probe first byte s (med/p90)</th>"
        table += "<th>MiB/s (med/p90)</th></tr>\n"
        for summary in summaries {
            table += "<tr data-route=\"\(escape(summary.route))\"><td>\(escape(summary.route))</td><td>\(summary.successes)/\(summary.trials)</td>"
            table += "<td>\(String(format: "%.0f%%", summary.successRate * 100))</td><td>\(summary.reachedBootstrap)</td>"
            table += "<td>\(summary.failedAfterBootstrap)</td><td>\(summary.harnessErrors)</td><td>\(pair(summary.firstByte))</td>"
            table += "<td>\(pair(summary.bootstrap))</td><td>\(pair(summary.probeFirstByte))</td><td>\(pair(summary.throughput, scale: 1_048_576))</td></tr>\n"
        }
        return table + "</table>\n"
    }

    static func harnessTable(_ errors: [ABResult.HarnessError]) -> String {
        guard !errors.isEmpty else {
            return "<p class=\"note\">None: every try of every trial ran as planned.</p>\n"
        }
        var table = "<p class=\"note\">Tries that failed for reasons of the harness, not the route: retried, and counted for no route.</p>\n"
        table += "<table class=\"harness\">\n<tr><th>trial</th><th>route</th><th>try</th><th>code</th><th>what happened</th><th>then</th></tr>\n"
        for error in errors {
            table += "<tr><td>\(error.trial)</td><td>\(escape(error.route))</td><td>\(error.attemptTry)</td><td class=\"harness\">\(escape(error.code.rawValue))</td>"
            table += "<td>\(escape(error.message))</td><td>\(error.retried ? "retried" : "given up")</td></tr>\n"
        }
        return table + "</table>\n"
    }

    static func trialTable(_ trials: [ABResult.Trial]) -> String {
        func number(_ value: Double?, scale: Double = 1) -> String { value.map { String(format: "%.2f", $0 / scale) } ?? "-" }
        var table = "<table class=\"trials\">\n<tr><th>trial</th><th>route</th><th>result</th><th>first byte s</th><th>100% s</th>"
        table += "<th>probe first byte s</th><th>MiB/s</th><th>failure</th></tr>\n"
        for trial in trials {
            let result = trial.succeeded ? "ok" : trial.failedAfterBootstrap ? "broke after 100%" : "failed"
            table += "<tr><td>\(trial.index)</td><td>\(escape(trial.route))#\(trial.attempt)</td>"
            table += "<td\(trial.succeeded ? "" : " class=\"failed\"")>\(result)</td><td>\(number(trial.firstByteSeconds))</td>"
            table += "<td>\(number(trial.bootstrapSeconds))</td><td>\(number(trial.probeFirstByteSeconds))</td>"
            table += "<td>\(number(trial.throughputBytesPerSecond, scale: 1_048_576))</td><td>\(escape(trial.failure?.placeAndReason ?? ""))</td></tr>\n"
        }
        return table + "</table>\n"
    }

    /// The SVG document without its XML declaration, to sit inside HTML.
    static func inlineSVG(_ svg: String) -> String {
        guard svg.hasPrefix("<?xml"), let end = svg.range(of: "?>") else { return svg }
        return String(svg[end.upperBound...]).trimmingCharacters(in: .newlines) + "\n"
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
