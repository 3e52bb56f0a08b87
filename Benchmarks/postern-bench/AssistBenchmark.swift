import Foundation

/// `postern-bench assist` (issue 14): time to ready of connection assist on the test bed under
/// each censor scenario, for (a) the race strategy, (b) the sequential strategy (the policy
/// before issue 14, default limits) and (c) the route that works there, alone (the oracle), all
/// in one run. Each run is a child `postern run` with a fresh config and data directory (no
/// cached consensus, no memory). Runs inside the test bed's namespace (scripts/bench-assist.sh),
/// switching the censor with `scripts/testbed censor`. Prints seconds and ratios to the oracle.
struct AssistBenchmark {
    struct Scenario {
        let censor: String
        /// `postern run` arguments of the oracle: the working route alone.
        let oracle: [String]
        let oracleName: String
    }

    struct Timing {
        var seconds: Double?
        var route: String
    }

    let environment = ProcessInfo.processInfo.environment
    let postern: String
    let testbedScript: String
    let bedDirectory: String
    let work: URL

    init() throws {
        guard let dir = environment["TB_DIR"], environment["TB_CLIENT_TORRC"] != nil, environment["TB_BRIDGE_OBFS4"] != nil else {
            throw UsageError(description: "postern-bench assist runs inside the test bed (scripts/bench-assist.sh)")
        }
        bedDirectory = dir
        let binDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        postern = environment["POSTERN_BIN"] ?? binDirectory.appendingPathComponent("postern").path
        testbedScript = environment["POSTERN_TESTBED_SCRIPT"] ?? "scripts/testbed"
        work = FileManager.default.temporaryDirectory.appendingPathComponent("postern-bench-assist-\(getpid())")
    }

    func env(_ key: String) -> String { environment[key] ?? "" }

    func setCensor(_ name: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: testbedScript)
        process.arguments = ["censor", name, "--dir", bedDirectory]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw UsageError(description: "testbed censor \(name) failed") }
    }

    /// Starts `postern run ARGS`, waits for its "ready:" line (at most `timeout`), stops it.
    func timeToReady(_ arguments: [String], name: String, socks: Int, timeout: Double = 400) throws -> Timing {
        let config = work.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        let builtins = config.appendingPathComponent("builtin-bridges.txt")
        try "\(env("TB_BRIDGE_OBFS4"))\n\(env("TB_BRIDGE_SNOWFLAKE"))\n".write(to: builtins, atomically: true, encoding: .utf8)
        if arguments.contains("auto") {
            // "Your" obfs4 bridge, as a user who pasted one.
            let add = Process()
            add.executableURL = URL(fileURLWithPath: postern)
            add.arguments = ["bridges", "add", "--config-dir", config.path, env("TB_BRIDGE_OBFS4")]
            add.standardOutput = FileHandle.nullDevice
            try add.run()
            add.waitUntilExit()
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: postern)
        process.arguments = ["run", "--config-dir", config.path, "--socks", "\(socks)", "--tor-options-file", env("TB_CLIENT_TORRC"),
                             "--builtin-bridges", builtins.path] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        let lines = LineCollector()
        pipe.fileHandleForReading.readabilityHandler = { handle in lines.append(handle.availableData) }
        let started = ContinuousClock.now
        try process.run()
        var timing = Timing(seconds: nil, route: "-")
        while (ContinuousClock.now - started) < .seconds(timeout), process.isRunning {
            if let ready = lines.first(containing: "ready: socks5") {
                timing.seconds = seconds(ContinuousClock.now - started)
                if let open = ready.range(of: "(route: "), let comma = ready.range(of: ", ", options: .backwards) {
                    timing.route = String(ready[open.upperBound..<comma.lowerBound])
                }
                break
            }
            usleep(20_000)
        }
        if process.isRunning { kill(process.processIdentifier, SIGINT) }
        process.waitUntilExit()
        pipe.fileHandleForReading.readabilityHandler = nil
        return timing
    }

    func run() throws {
        defer { try? FileManager.default.removeItem(at: work) }
        let scenarios = [
            Scenario(censor: "none", oracle: ["--transport", "direct"], oracleName: "direct"),
            Scenario(censor: "block-tor", oracle: ["--transport", "obfs4", "--bridge", env("TB_BRIDGE_OBFS4")], oracleName: "obfs4"),
            Scenario(censor: "block-tor-and-bridges", oracle: ["--transport", "snowflake", "--bridge", env("TB_BRIDGE_SNOWFLAKE")],
                     oracleName: "snowflake"),
        ]
        say("connection assist: time to ready (s) on the test bed, fresh state each run; ratio = strategy / oracle")
        say("scenario               oracle (route)        race (route)                          sequential (route)")
        var rows: [(String, Timing, Timing, Timing)] = []
        defer { try? setCensor("none") }
        // One unmeasured run first: the bed's relays and the page cache are warm for every
        // measured run alike, not only for the ones after the first.
        try setCensor("none")
        _ = try timeToReady(["--transport", "direct"], name: "warm-up", socks: 39_559)
        for (index, scenario) in scenarios.enumerated() {
            try setCensor(scenario.censor)
            let socks = 39_560 + index * 3
            var oracle = try timeToReady(scenario.oracle, name: "\(scenario.censor)-oracle", socks: socks)
            oracle.route = scenario.oracleName
            let race = try timeToReady(["--transport", "auto", "--assist-strategy", "race"], name: "\(scenario.censor)-race", socks: socks + 1)
            let sequential = try timeToReady(["--transport", "auto", "--assist-strategy", "sequential"],
                                             name: "\(scenario.censor)-sequential", socks: socks + 2)
            rows.append((scenario.censor, oracle, race, sequential))
            say(line(scenario.censor, oracle, race, sequential))
        }
        say("")
        say("scenario               race - oracle   race / oracle   sequential - oracle   sequential / oracle   goal (race <= oracle + 5 s)")
        var allMet = true
        for (censor, oracle, race, sequential) in rows {
            guard let o = oracle.seconds else {
                say("\(censor.padding(toLength: 23, withPad: " ", startingAt: 0))oracle did not get ready")
                allMet = false
                continue
            }
            func delta(_ t: Timing) -> String { t.seconds.map { String(format: "%+.1f s", $0 - o) } ?? "not ready" }
            func ratio(_ t: Timing) -> String { t.seconds.map { String(format: "%.2f", $0 / o) } ?? "-" }
            let met = race.seconds.map { $0 <= o + 5 } ?? false
            allMet = allMet && met
            say(censor.padding(toLength: 23, withPad: " ", startingAt: 0) + delta(race).padding(toLength: 16, withPad: " ", startingAt: 0)
                  + ratio(race).padding(toLength: 16, withPad: " ", startingAt: 0) + delta(sequential).padding(toLength: 22, withPad: " ", startingAt: 0)
                  + ratio(sequential).padding(toLength: 22, withPad: " ", startingAt: 0) + (met ? "met" : "MISSED"))
        }
        say(allMet ? "goal met in every scenario" : "goal missed in at least one scenario")
    }

    private func line(_ censor: String, _ oracle: Timing, _ race: Timing, _ sequential: Timing) -> String {
        func cell(_ t: Timing, _ width: Int) -> String {
            let text = t.seconds.map { String(format: "%6.1f", $0) } ?? "  none"
            return "\(text) (\(t.route))".padding(toLength: width, withPad: " ", startingAt: 0)
        }
        return censor.padding(toLength: 23, withPad: " ", startingAt: 0) + cell(oracle, 22) + cell(race, 38) + cell(sequential, 38)
    }
}

/// Output lines of a child, collected from a pipe's readability handler.
final class LineCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var text = ""
    private let limit = 1 << 20

    func append(_ data: Data) {
        lock.lock()
        defer { lock.unlock() }
        if text.utf8.count < limit { text += String(decoding: data, as: UTF8.self) }
    }

    func first(containing needle: String) -> String? {
        lock.lock()
        defer { lock.unlock() }
        return text.split(separator: "\n").first { $0.contains(needle) }.map(String.init)
    }
}

/// A line to stdout at once (print buffers when stdout is not a terminal, and the runs are long).
private func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
