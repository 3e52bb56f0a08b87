// A separate process for BridgeStore tests that need real processes:
//
//   BridgeStoreCrashWriter write-loop <dir> <first-generation>
//       Writes generation after generation (see `generationConfiguration`) until killed, printing
//       "committed N" after each update returns. The test kills it with SIGKILL at random moments.
//   BridgeStoreCrashWriter add <dir> <tag> <count>
//       Adds <count> distinct bridges tagged <tag>, one update each (lost-update test).
//
// Lines are read with the grammar only (`.syntaxOnly`): what is under test is the store's
// atomicity and locking; the tests read the result back with Postern's full rulebook.
import BridgeConfig
import PosternLinkSpec
#if canImport(Glibc)
import Glibc
#endif

/// Must match `CrashSafetyTests.generationConfiguration` in the test target.
func generationConfiguration(_ generation: Int) throws -> BridgeConfiguration {
    var configuration = BridgeConfiguration()
    for index in 0..<(1 + generation % 20) {
        let digit = String(index % 16, radix: 16).uppercased()
        let line = try BridgeLine(validating: "198.51.100.\(index + 1):\(1024 + generation % 60000) \(String(repeating: digit, count: 40))", rules: .syntaxOnly)
        try configuration.add(line)
    }
    configuration.transport = generation % 2 == 0 ? .auto : .direct
    configuration.torEnabled = generation % 3 != 0
    for relay in 0..<(generation % 9) { try configuration.addRelay("relay\(relay).example.net") }
    return configuration
}

/// Unbuffered, so a "committed" line is out of the process before the next write starts.
func writeLine(_ descriptor: Int32, _ text: String) {
    let bytes = Array((text + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let count = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if count <= 0 { return }
        offset += count
    }
}

func fail(_ message: String) -> Never {
    writeLine(2, "BridgeStoreCrashWriter: \(message)")
    exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count >= 4 else { fail("usage: write-loop <dir> <first> | add <dir> <tag> <count>") }
do {
    let store = try BridgeStore(directory: arguments[2], rules: .syntaxOnly)
    switch arguments[1] {
    case "write-loop":
        guard var generation = Int(arguments[3]) else { fail("bad generation") }
        while true {
            let next = try generationConfiguration(generation)
            try store.update { $0 = next }
            writeLine(1, "committed \(generation)")
            generation += 1
        }
    case "add":
        guard arguments.count == 5, let tag = Int(arguments[3]), let count = Int(arguments[4]) else { fail("bad add arguments") }
        for index in 0..<count {
            let line = try BridgeLine(validating: "obfs4 198.51.\(100 + tag).\(index + 1):443 cert=\(String(repeating: "A", count: 70)) iat-mode=0", rules: .syntaxOnly)
            try store.update { try $0.add(line) }
        }
    default:
        fail("unknown mode \(arguments[1])")
    }
} catch {
    fail("\(error)")
}
