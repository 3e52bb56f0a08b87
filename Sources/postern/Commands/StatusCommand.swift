import Foundation

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
            guard let record = try? RunStatusRecord.read(from: file), kill(record.pid, 0) == 0 else {
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
                if record.bootstrapDidStall { text += "\nstalled: yes (no 100% within the deadline; tor keeps trying)" }
                if let warning = record.bootstrapWarning { text += "\nlast warning: \(warning)" }
                text += "\nroute: \(record.route)\nsocks: socks5 \(record.socks)\npid: \(record.pid)"
                if let error = record.lastError { text += "\nerror: \(error)" }
                invocation.output.print(text)
            }
            return 0
        })
}
