import Foundation
import TrialAnalysis

extension ABResult {
    public static let csvHeader = ["index", "route", "attempt", "warm", "succeeded", "first_byte_s", "bootstrap_s",
                                   "probe_first_byte_s", "probe_bytes", "throughput_bytes_per_s", "failure_stage",
                                   "failure_progress", "failure_tag", "failure_reason", "events_file"]

    public var csv: String {
        func number(_ value: Double?) -> String { value.map { String(format: "%.6f", $0) } ?? "" }
        return CSV.render(header: Self.csvHeader, rows: trials.map { trial in
            [String(trial.index), trial.route, String(trial.attempt), String(trial.warm), String(trial.succeeded),
             number(trial.firstByteSeconds), number(trial.bootstrapSeconds), number(trial.probeFirstByteSeconds),
             trial.probeBytes.map(String.init) ?? "", number(trial.throughputBytesPerSecond), trial.failure?.stage.rawValue ?? "",
             trial.failure?.progress.map(String.init) ?? "", trial.failure?.tag ?? "", trial.failure?.reason ?? "",
             trial.eventsFile]
        })
    }

    /// The charts: time to 100 %, probe first byte and throughput by route, side by side.
    public var svg: String {
        SmallMultiplesSVG.render(title: "\(trialsPerRoute) trials per route" + (network.map { " on \($0)" } ?? ""),
                                 panels: Self.panels(routes: routes, trials: trials, summaries: summaries))
    }

    static func panels(routes: [String], trials: [Trial], summaries: [RouteSummary]) -> [BoxPlotSVG.Panel] {
        func groups(_ figure: FigureName, scale: Double) -> [BoxPlotSVG.Group] {
            summaries.map { summary in
                let values = trials.filter { $0.route == summary.route }.compactMap { figure.value(of: $0) }.map { $0 / scale }
                let note = figure == .bootstrap ? "\(summary.reachedBootstrap)/\(summary.trials) at 100%" : "\(values.count)/\(summary.trials) probes"
                return BoxPlotSVG.Group(label: summary.route, values: values, note: note)
            }
        }
        return [
            BoxPlotSVG.Panel(id: "bootstrap", title: "Time to 100%", axisLabel: "seconds", groups: groups(.bootstrap, scale: 1)),
            BoxPlotSVG.Panel(id: "first-byte", title: "Probe first byte", axisLabel: "seconds", groups: groups(.probeFirstByte, scale: 1)),
            BoxPlotSVG.Panel(id: "throughput", title: "Throughput", axisLabel: "MiB/s", groups: groups(.throughput, scale: 1_048_576)),
        ]
    }
}
