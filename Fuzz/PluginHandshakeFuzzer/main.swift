// What an external plugin (a pt-spec managed client) prints on stdout, read by the parent side of
// the configuration protocol (`ManagedClientHandshake`), line by line as the reader thread hands
// it over. A plugin is a program the user chose, but its output is still not trusted to be sane.
//
// Invariants, trapping when broken:
//   - raw input (split at LF): the outcome is final (no line after `configured` or `failed` changes
//     it); a configured result holds only requested names and only loopback endpoints with a
//     non-zero port; a failure's reason is printable ASCII of bounded length;
//   - a well-formed session built from fuzzer-chosen ports, with LOG/STATUS/unknown lines mixed in,
//     configures exactly the ports that were announced.
import FuzzSupport
import TransportBase

let requested = [TransportName("obfs4")!, TransportName("meek_lite")!]

func outcome(of lines: [[UInt8]], proxy: Bool) -> ManagedClientHandshake.Step {
    var parser = ManagedClientHandshake(requested: requested, proxyRequested: proxy)
    var result = ManagedClientHandshake.Step.needMore
    for line in lines {
        let step = parser.consume(line)
        if result == .needMore {
            result = step
        } else {
            fuzzCheck(step == .needMore, "a line after the final outcome changed it")
        }
    }
    return result
}

func checkOutcome(_ step: ManagedClientHandshake.Step) {
    switch step {
    case .needMore: break
    case .configured(let methods, let errors):
        for (name, endpoint) in methods {
            fuzzCheck(requested.contains(name), "an unrequested transport was configured")
            fuzzCheck(endpoint.isLoopback && endpoint.port != 0, "a non-loopback or zero-port listener was accepted")
        }
        fuzzCheck(errors.keys.allSatisfy(requested.contains), "an unrequested transport's error was kept")
        fuzzCheck(errors.values.allSatisfy { $0.utf8.count <= 200 }, "an error message is unbounded")
    case .failed(let reason), .proxyNotAccepted(let reason):
        fuzzCheck(reason.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F } && reason.utf8.count <= 300, "a failure reason is not bounded ASCII")
    }
}

runFuzzer { input in
    let bytes = Array(input)
    guard let mode = bytes.first else { return }
    let body = Array(bytes.dropFirst())
    if mode & 1 == 0 {
        let lines = body.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
        checkOutcome(outcome(of: lines, proxy: mode & 2 != 0))
        return
    }
    // A well-formed session.
    var cursor = FuzzInput(bytes: body)
    var lines: [String] = []
    var announced: [TransportName: UInt16] = [:]
    lines.append("VERSION 1")
    while lines.count < 900, let choice = cursor.byte() {
        switch choice % 5 {
        case 0: lines.append("LOG SEVERITY=notice MESSAGE=\"\(choice)\"")
        case 1: lines.append("STATUS TRANSPORT=obfs4 X=\(choice)")
        case 2: lines.append("SOMETHING-NEW \(choice)")
        default:
            let name = requested[Int(choice) % requested.count]
            let port = UInt16(max(1, cursor.uint16() ?? 1))
            lines.append("CMETHOD \(name) socks5 127.0.0.1:\(port)")
            announced[name] = port
        }
    }
    lines.append("CMETHODS DONE")
    let step = outcome(of: lines.map { Array($0.utf8) }, proxy: false)
    guard case .configured(let methods, _) = step else {
        fuzzCheck(false, "a well-formed session did not configure: \(step)")
        return
    }
    fuzzCheck(methods.mapValues(\.port) == announced, "configured ports differ from the announced ones")
}
