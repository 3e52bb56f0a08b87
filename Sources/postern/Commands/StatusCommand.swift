import PosternRuntime
import Foundation
import PosternTor

extension Command {
    static let status = Command(
        name: "status",
        summary: "Show the state of a running 'postern run'",
        details: "Reads the status that 'postern run' publishes in the state directory. Exits 1 when nothing runs.",
        options: [.flag("json", "print the status as JSON")],
        run: { invocation in
            try invocation.requireNoPositionals()
            let file = invocation.paths.runStatusFile
            // The runtime's test of a live `postern run` (the file parses, its pid lives), as `nostr` and `geo` attach.
            let running: RunningSession?
            do {
                running = try RunningSession.find(statusFile: file)
            } catch let error as SessionError {
                throw CommandFailure(error.message)
            }
            guard let record = running?.record else {
                invocation.output.print(invocation.json ? #"{"running":false,"state":"idle"}"# : "not running")
                return 1
            }
            invocation.output.print(invocation.json ? try record.jsonLine() : record.text)
            return 0
        })
}
