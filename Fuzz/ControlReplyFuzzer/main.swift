// Tor control-protocol replies (control-spec §2.3): the incremental reply parser and the
// keyword/quoted-string syntax, fed the fuzzer's bytes as CRLF- or LF-separated lines.
//
// Invariants, trapping when broken:
//   - every reply the parser returns, written back in wire form (mid lines "-", data lines "+" with
//     dot-stuffed data, end line " "), parses to the same reply, and all its lines share one status;
//   - after an error the parser holds no partial reply;
//   - keywordArguments of a line, written back (positional words, then KEY="quoted value"), parses
//     to the same words and keywords, and quoted(text) always reads back as text;
//   - an ORCONN event or a bootstrap warning from any line parses without trapping, within its
//     caps, and its failure signal, fed to connection assist's selector, never traps.
import ConnectionAssist
import FuzzSupport
import PosternTor

func wireLines(_ reply: ControlReply) -> [String] {
    var lines: [String] = []
    for (index, line) in reply.lines.enumerated() {
        let status = format3(line.status)
        if let data = line.data {
            lines.append("\(status)+\(line.text)")
            lines += data.map { $0.hasPrefix(".") ? "." + $0 : $0 }
            lines.append(".")
        } else {
            lines.append("\(status)\(index == reply.lines.count - 1 ? " " : "-")\(line.text)")
        }
    }
    return lines
}

func format3(_ status: Int) -> String {
    let digits = String(status)
    return String(repeating: "0", count: max(0, 3 - digits.count)) + digits
}

func checkControlReplies(_ input: UnsafeRawBufferPointer) {
    let text = String(decoding: input, as: UTF8.self)
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
        line.hasSuffix("\r") ? String(line.dropLast()) : String(line)
    }
    var parser = ControlReplyParser()
    // One selector per input: every input's signals are judged from the same start.
    var assistSelector = RouteSelector(routes: [.direct()], strategy: .race)
    _ = assistSelector.start(at: .zero)
    for line in lines {
        let reply: ControlReply?
        do {
            reply = try parser.feed(line)
        } catch {
            fuzzCheck(!parser.isInsideReply, "a partial reply survived an error")
            continue
        }
        if let reply {
            fuzzCheck(!reply.lines.isEmpty && reply.lines.allSatisfy { $0.status == reply.status && (0...999).contains($0.status) },
                      "a reply with mixed or impossible statuses")
            var again = ControlReplyParser()
            var reparsed: ControlReply?
            for wire in wireLines(reply) {
                fuzzCheck(reparsed == nil, "the written-back reply ended early")
                reparsed = try? again.feed(wire)
            }
            fuzzCheck(reparsed == reply, "a reply does not round-trip through its wire form")
            fuzzCheck(!parser.isInsideReply, "a finished reply left state behind")
        }

        if let (positional, keywords) = try? ControlSyntax.keywordArguments(line) {
            let written = (positional + keywords.keys.sorted().map { "\($0)=\(ControlSyntax.quoted(keywords[$0]!))" }).joined(separator: " ")
            let reread = try? ControlSyntax.keywordArguments(written)
            fuzzCheck(reread?.positional == positional && reread?.keywords == keywords, "keyword arguments do not round-trip")
        }
        fuzzCheck((try? ControlSyntax.keywordArguments("K=" + ControlSyntax.quoted(line)))?.keywords["K"] == line,
                  "a quoted string does not read back")

        var signals: [ConnectionSignal] = []
        if let event = try? OrConnectionEvent.parse(eventText: line) {
            fuzzCheck(event.target.utf8.count <= 256 && event.status.rawValue.utf8.count <= 32, "an ORCONN event past its caps")
            if let signal = ConnectionSignal(event) { signals.append(signal) }
        }
        if line.hasPrefix("STATUS_CLIENT "), let phase = try? BootstrapPhase.parse(statusText: String(line.dropFirst("STATUS_CLIENT ".count))),
           let problem = phase.problem {
            fuzzCheck(problem.reason.utf8.count <= 64 && (problem.count.map { (0...1_000_000).contains($0) } ?? true),
                      "a bootstrap problem past its caps")
            if let signal = ConnectionSignal(problem) { signals.append(signal) }
        }
        for signal in signals {
            _ = assistSelector.observe(signal: signal, at: .seconds(5))
        }
    }
}

runFuzzer(checkControlReplies)
