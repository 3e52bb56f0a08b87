import Foundation
import ConnectionAssist
import PosternTor

extension RunStatusRecord {
    /// The record as one line of JSON (keys sorted, dates ISO 8601), as the status file holds it.
    package func jsonLine() throws -> String {
        String(decoding: try Self.encoder().encode(self), as: UTF8.self)
    }

    /// The record for people, as `postern status` shows it: state, bootstrap, connection assist
    /// (or the stall), tor's last warning, route, SOCKS endpoint, pid and error.
    package var text: String {
        var lines = ["state: \(state)", "bootstrap: \(bootstrapProgress)% \(bootstrapSummary)"]
        if let assist {
            lines += assist.statusLines
        } else if bootstrapDidStall {
            lines.append("stalled: yes (no 100% within the deadline; tor keeps trying)")
        }
        if let bootstrapWarning { lines.append("last warning: \(bootstrapWarning)") }
        lines += ["route: \(route)", "socks: socks5 \(socks)", "pid: \(pid)"]
        if let lastError { lines.append("error: \(lastError)") }
        return lines.joined(separator: "\n")
    }
}

extension AssistSnapshot {
    /// Connection assist's part of a status: what it does on which route, the route order and
    /// why it last moved on.
    package var statusLines: [String] {
        var lines: [String] = []
        let place = position.map { " (route \($0) of \(order.count), pass \(cycle))" } ?? ""
        switch phase {
        case "connected": lines.append("connection assist: connected via \(route ?? "?")\(place)")
        case "trying": lines.append("connection assist: trying \(route ?? "?")\(place)")
        case "waiting":
            let retry = retryInSeconds.map { String(format: "%.0f", $0.rounded(.up)) } ?? "?"
            lines.append("stalled: yes, every route failed; connection assist tries them all again in \(retry) s (tor keeps trying \(route ?? "the last one") meanwhile)")
        default: lines.append("connection assist: \(phase)")
        }
        lines.append("route order: \(order.map(\.rawValue).joined(separator: ", "))")
        if let lastMove { lines.append("last move: \(lastMove)") }
        for diagnosis in diagnoses ?? [] { lines.append("diagnosis: \(diagnosis.route): \(diagnosis.summary)") }
        return lines
    }
}
