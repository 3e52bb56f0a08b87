import PosternRuntime
import Foundation
import PosternCore

extension Command {
    static let status = Command(
        name: "status",
        summary: "Show the state of a running 'postern run'",
        details: "Reads the status that 'postern run' publishes in the state directory. Exits 1 when nothing runs.",
        options: [.flag("json", "print the status as JSON")],
        run: { invocation in
            guard invocation.arguments.positionals.isEmpty else {
                throw invocation.usageError("unexpected argument '\(invocation.arguments.positionals[0])'")
            }
            let file = invocation.paths.runStatusFile
            // The runtime's test of a live `postern run` (the file parses, its pid lives), as `nostr` and `geo` attach.
            guard let record = RunningSession.find(statusFile: file)?.record else {
                if invocation.json {
                    invocation.output.print(#"{"running":false,"state":"idle"}"#)
                } else {
                    invocation.output.print("not running")
                }
                return 1
            }
            if invocation.json {
                invocation.output.print(String(decoding: try RunStatusRecord.encoder().encode(record), as: UTF8.self))
            } else {
                var text = "state: \(record.state)\nbootstrap: \(record.bootstrapProgress)% \(record.bootstrapSummary)"
                if let assist = record.assist {
                    text += "\n" + describe(assist)
                } else if record.bootstrapDidStall {
                    text += "\nstalled: yes (no 100% within the deadline; tor keeps trying)"
                }
                if let warning = record.bootstrapWarning { text += "\nlast warning: \(warning)" }
                text += "\nroute: \(record.route)\nsocks: socks5 \(record.socks)\npid: \(record.pid)"
                if let error = record.lastError { text += "\nerror: \(error)" }
                invocation.output.print(text)
            }
            return 0
        })
}

/// Connection assist's part of `postern status`.
private func describe(_ assist: AssistSnapshot) -> String {
    var lines: [String] = []
    let where_ = assist.position.map { " (route \($0) of \(assist.order.count), pass \(assist.cycle))" } ?? ""
    switch assist.phase {
    case "connected": lines.append("connection assist: connected via \(assist.route ?? "?")\(where_)")
    case "trying": lines.append("connection assist: trying \(assist.route ?? "?")\(where_)")
    case "waiting":
        let retry = assist.retryInSeconds.map { String(format: "%.0f", $0.rounded(.up)) } ?? "?"
        lines.append("stalled: yes, every route failed; connection assist tries them all again in \(retry) s (tor keeps trying \(assist.route ?? "the last one") meanwhile)")
    default: lines.append("connection assist: \(assist.phase)")
    }
    lines.append("route order: \(assist.order.joined(separator: ", "))")
    if let lastMove = assist.lastMove { lines.append("last move: \(lastMove)") }
    return lines.joined(separator: "\n")
}
