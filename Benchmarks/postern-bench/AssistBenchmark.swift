import Foundation

/// `postern-bench assist` (issue 14): time to ready of connection assist on the test bed under
/// each censor scenario, for (a) the race strategy, (b) the sequential strategy (the policy
/// before issue 14, default limits) and (c) the route that works there, alone (the oracle), all
/// in one run. Each run is a child `postern run` with a fresh config and data directory (no
/// cached consensus, no memory). Runs inside the test bed's namespace (scripts/bench-assist.sh),
/// switching the censor with `scripts/testbed censor`. Prints seconds and ratios to the oracle.
///
/// Then issue 22's censors (`fet` at P = 100 %, `freeze`, `burst`; docs/TESTBED.md) with
/// `--bridge` lines only, as a user who pasted bridges: besides time to ready, the time to
/// verdict, until the first `diagnosis` line for a route the censor blocks (or `stalled: every
/// route failed`), and the connections the censor blocked (`testbed censor-stats`). The censor is
/// applied afresh before every run: fet drops a caught ip:port for 180 s and burst for 60 s, which
/// would otherwise carry over into the next run.
struct AssistBenchmark {
    struct Scenario {
        let censor: String
        /// `postern run` arguments of the oracle: the working route alone.
        let oracle: [String]
        let oracleName: String
    }

    /// One of issue 22's censors: its options, the bridges pasted, the transports whose
    /// diagnosis is the verdict (empty: none is expected, any diagnosis counts).
    struct CensorScenario {
        let censor: String
        let options: [String]
        /// Test bed variables of the bridges (`--bridge` lines), in this order.
        let bridges: [String]
        let blocked: [String]
        /// The transport the oracle runs alone when the race got ready on none.
        let fallbackOracle: String
        /// How long a run goes on after ready for the verdict (the diagnosis may follow ready:
        /// its confirm connect takes up to 3 s).
        let verdictWait: Double
        /// The goal of the acceptance tests: ready within the oracle + this many seconds
        /// (Tests/IntegrationTests/ConnectionAssistCensorTests.swift, FreezeCensorTests.swift).
        let slack: Double
    }

    struct Timing {
        var seconds: Double?
        var route: String
        var verdict: Double? = nil
        var verdictRoute = "-"
        var blocked: Int? = nil
    }

    let environment = ProcessInfo.processInfo.environment
    let postern: String
    let testbedScript: String
    let bedDirectory: String
    let work: URL
    let only: Set<String>?

    init(only: Set<String>? = nil) throws {
        self.only = only
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

    func setCensor(_ name: String, _ options: [String] = []) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: testbedScript)
        process.arguments = ["censor", name] + options + ["--dir", bedDirectory]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw UsageError(description: "testbed censor \(name) failed") }
    }

    /// The connections the censor blocked since it was applied (`testbed censor-stats --json`).
    func censorBlocked() -> Int? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: testbedScript)
        process.arguments = ["censor-stats", "--json", "--dir", bedDirectory]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        return object["blocked_total"] as? Int
    }

    /// Starts `postern run ARGS`, waits for its "ready:" line (at most `timeout`), stops it.
    /// With `verdict` (the transports whose diagnosis counts; empty: any), it also times the first
    /// such `diagnosis` line or `stalled: every route failed`, and goes on after ready for at
    /// most `verdictWait` s to see it.
    func timeToReady(_ arguments: [String], name: String, socks: Int, timeout: Double = 400, builtins useBuiltins: Bool = true,
                     verdict: [String]? = nil, verdictWait: Double = 0) throws -> Timing {
        let config = work.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        let builtins = config.appendingPathComponent("builtin-bridges.txt")
        try "\(env("TB_BRIDGE_OBFS4"))\n\(env("TB_BRIDGE_SNOWFLAKE"))\n".write(to: builtins, atomically: true, encoding: .utf8)
        if useBuiltins, arguments.contains("auto") {
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
        process.arguments = ["run", "--config-dir", config.path, "--socks", "\(socks)", "--tor-options-file", env("TB_CLIENT_TORRC")]
            + (useBuiltins ? ["--builtin-bridges", builtins.path] : []) + arguments
        // The bed's webtunnel server has a certificate from the bed's own CA.
        var childEnvironment = environment
        if let ca = environment["TB_WEBTUNNEL_CA"] { childEnvironment["SSL_CERT_FILE"] = ca }
        process.environment = childEnvironment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        let lines = LineCollector()
        pipe.fileHandleForReading.readabilityHandler = { handle in lines.append(handle.availableData) }
        let started = ContinuousClock.now
        try process.run()
        var timing = Timing(seconds: nil, route: "-")
        while (ContinuousClock.now - started) < .seconds(timeout), process.isRunning {
            let now = seconds(ContinuousClock.now - started)
            if timing.seconds == nil, let ready = lines.first(containing: "ready: socks5") {
                timing.seconds = now
                if let open = ready.range(of: "(route: "), let comma = ready.range(of: ", ", options: .backwards) {
                    timing.route = String(ready[open.upperBound..<comma.lowerBound])
                }
            }
            if let verdict, timing.verdict == nil, let line = lines.first(where: { Self.isVerdict($0, blocked: verdict) }) {
                timing.verdict = now
                timing.verdictRoute = Self.verdictRoute(line)
            }
            if let ready = timing.seconds, verdict == nil || timing.verdict != nil || now - ready >= verdictWait { break }
            usleep(20_000)
        }
        if process.isRunning { kill(process.processIdentifier, SIGINT) }
        process.waitUntilExit()
        pipe.fileHandleForReading.readabilityHandler = nil
        return timing
    }

    /// A `diagnosis ROUTE: ...` line for a route of one of the `blocked` transports (any route
    /// when empty), or the line that says every route failed.
    static func isVerdict(_ line: Substring, blocked: [String]) -> Bool {
        if line.contains("stalled: every route failed") { return true }
        guard let at = line.range(of: "diagnosis "), let colon = line[at.upperBound...].range(of: ": ") else { return false }
        let route = line[at.upperBound..<colon.lowerBound]
        return blocked.isEmpty || blocked.contains { route.contains("(\($0),") || route == $0 }
    }

    /// The transport a verdict line names ("obfs4", "vanilla"...), or "all failed".
    static func verdictRoute(_ line: Substring) -> String {
        if line.contains("stalled: every route failed") { return "all failed" }
        guard let at = line.range(of: "diagnosis "), let colon = line[at.upperBound...].range(of: ": ") else { return "?" }
        let route = line[at.upperBound..<colon.lowerBound]
        if let open = route.range(of: "("), let comma = route[open.upperBound...].range(of: ",") {
            return String(route[open.upperBound..<comma.lowerBound])
        }
        return String(route)
    }

    func run() throws {
        defer { try? FileManager.default.removeItem(at: work) }
        defer { try? setCensor("none") }
        // One unmeasured run first: the bed's relays and the page cache are warm for every
        // measured run alike, not only for the ones after the first.
        try setCensor("none")
        _ = try timeToReady(["--transport", "direct"], name: "warm-up", socks: 39_559)
        try runClassic()
        try runCensors()
    }

    func runClassic() throws {
        let scenarios = [
            Scenario(censor: "none", oracle: ["--transport", "direct"], oracleName: "direct"),
            Scenario(censor: "block-tor", oracle: ["--transport", "obfs4", "--bridge", env("TB_BRIDGE_OBFS4")], oracleName: "obfs4"),
            Scenario(censor: "block-tor-and-bridges", oracle: ["--transport", "snowflake", "--bridge", env("TB_BRIDGE_SNOWFLAKE")],
                     oracleName: "snowflake"),
        ].filter { only?.contains($0.censor) ?? true }
        guard !scenarios.isEmpty else { return }
        say("connection assist: time to ready (s) on the test bed, fresh state each run; ratio = strategy / oracle")
        say("scenario               oracle (route)        race (route)                          sequential (route)")
        var rows: [(String, Timing, Timing, Timing)] = []
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
        for (censor, oracle, race, sequential) in rows {
            say("RESULT assist \(censor): ready oracle \(Self.figure(oracle.seconds)) (\(oracle.route)), race \(Self.figure(race.seconds)), sequential \(Self.figure(sequential.seconds))"
                + "; race - oracle \(Self.delta(race.seconds, oracle.seconds)) (goal <= +5 s \(Self.met(race.seconds, oracle.seconds, 5)))")
        }
    }

    static func figure(_ value: Double?) -> String { value.map { String(format: "%.1f s", $0) } ?? "none" }
    static func delta(_ value: Double?, _ base: Double?) -> String {
        guard let value, let base else { return "-" }
        return String(format: "%+.1f s", value - base)
    }
    static func met(_ value: Double?, _ base: Double?, _ slack: Double) -> String {
        guard let value, let base else { return "MISSED" }
        return value <= base + slack ? "met" : "MISSED"
    }

    /// Issue 22's censors, `--bridge` lines only (no direct route: the acceptance tests' setting).
    func runCensors() throws {
        let scenarios = [
            // P = 100 %: every obfs4 flow is caught; TLS and DTLS first packets are exempt.
            CensorScenario(censor: "fet", options: ["--probability", "100"], bridges: ["TB_BRIDGE_OBFS4", "TB_BRIDGE_SNOWFLAKE", "TB_BRIDGE_WEBTUNNEL"],
                           blocked: ["obfs4"], fallbackOracle: "snowflake", verdictWait: 15, slack: 5),
            // The default 16 KiB cut; webtunnel is left out: without a CDN in front (not modelled)
            // it is frozen like obfs4 and vanilla.
            CensorScenario(censor: "freeze", options: [], bridges: ["TB_BRIDGE_OBFS4", "TB_BRIDGE_VANILLA", "TB_BRIDGE_SNOWFLAKE"],
                           blocked: ["obfs4", "vanilla"], fallbackOracle: "snowflake", verdictWait: 15, slack: 10),
            // K = 3 per second, 60 s: every route passes if the client stays under K; no verdict
            // is expected, and the censor should count no blocked connection.
            CensorScenario(censor: "burst", options: ["--connections", "3", "--block-seconds", "60"],
                           bridges: ["TB_BRIDGE_OBFS4", "TB_BRIDGE_VANILLA", "TB_BRIDGE_SNOWFLAKE", "TB_BRIDGE_WEBTUNNEL"],
                           blocked: [], fallbackOracle: "obfs4", verdictWait: 0, slack: 5),
        ].filter { only?.contains($0.censor) ?? true }
        guard !scenarios.isEmpty else { return }
        say("")
        say("connection assist under issue 22's censors, --bridge lines only: time to ready / time to verdict (s), fresh state and a fresh censor each run")
        say("(verdict: the first diagnosis of a route the censor blocks, or every route failed; blocked: connections the censor blocked in the run)")
        say("scenario               oracle (route)        race (route)          race verdict      sequential (route)    sequential verdict")
        var rows: [(CensorScenario, Timing, Timing, Timing)] = []
        for (index, scenario) in scenarios.enumerated() {
            let socks = 39_580 + index * 3
            let bridges = scenario.bridges.filter { !env($0).isEmpty }.flatMap { ["--bridge", env($0)] }
            func measure(_ arguments: [String], _ name: String, _ port: Int, verdict: Bool) throws -> Timing {
                try setCensor(scenario.censor, scenario.options)
                var timing = try timeToReady(arguments, name: "\(scenario.censor)-\(name)", socks: port, timeout: 180, builtins: false,
                                             verdict: verdict ? scenario.blocked : nil, verdictWait: scenario.verdictWait)
                timing.blocked = censorBlocked()
                return timing
            }
            let race = try measure(["--transport", "auto", "--assist-strategy", "race"] + bridges, "race", socks + 1, verdict: true)
            // The oracle: the route the race got ready on, alone (the acceptance tests' oracle).
            let transport = ["webtunnel", "snowflake", "obfs4", "vanilla"].first { race.route.contains("(\($0),") } ?? scenario.fallbackOracle
            let oracleBridge = env("TB_BRIDGE_\(transport.uppercased())")
            var oracle = try measure(["--transport", transport, "--bridge", oracleBridge], "oracle", socks, verdict: false)
            oracle.route = transport
            let sequential = try measure(["--transport", "auto", "--assist-strategy", "sequential"] + bridges, "sequential", socks + 2, verdict: true)
            rows.append((scenario, oracle, race, sequential))
            say(censorLine(scenario.censor, oracle, race, sequential))
        }
        for (scenario, oracle, race, sequential) in rows {
            func verdict(_ t: Timing) -> String { t.verdict.map { String(format: "%.1f s", $0) + " (\(t.verdictRoute))" } ?? "none" }
            func blocked(_ t: Timing) -> String { t.blocked.map(String.init) ?? "?" }
            var line = "RESULT assist \(scenario.censor): ready oracle \(Self.figure(oracle.seconds)) (\(oracle.route)), race \(Self.figure(race.seconds)) (\(Self.transport(race.route)))"
                + ", sequential \(Self.figure(sequential.seconds)) (\(Self.transport(sequential.route)))"
            line += "; verdict race \(verdict(race)), sequential \(verdict(sequential))"
            line += "; race - oracle \(Self.delta(race.seconds, oracle.seconds)) (goal <= +\(Int(scenario.slack)) s \(Self.met(race.seconds, oracle.seconds, scenario.slack)))"
            line += "; censor blocked \(blocked(oracle))/\(blocked(race))/\(blocked(sequential)) connections (oracle/race/sequential)"
            say(line)
        }
    }

    /// The transport of a route label ("bridges (snowflake, command line)" -> "snowflake").
    static func transport(_ route: String) -> String {
        guard let open = route.range(of: "("), let comma = route[open.upperBound...].range(of: ",") else { return route }
        return String(route[open.upperBound..<comma.lowerBound])
    }

    private func censorLine(_ censor: String, _ oracle: Timing, _ race: Timing, _ sequential: Timing) -> String {
        func cell(_ t: Timing, _ width: Int) -> String {
            let text = t.seconds.map { String(format: "%6.1f", $0) } ?? "  none"
            return "\(text) (\(Self.transport(t.route)))".padding(toLength: width, withPad: " ", startingAt: 0)
        }
        func verdict(_ t: Timing) -> String {
            let text = t.verdict.map { String(format: "%6.1f", $0) } ?? "  none"
            return "\(text) (\(t.verdictRoute))".padding(toLength: 18, withPad: " ", startingAt: 0)
        }
        return censor.padding(toLength: 23, withPad: " ", startingAt: 0) + cell(oracle, 22) + cell(race, 22) + verdict(race) + cell(sequential, 22) + verdict(sequential)
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
        first { $0.contains(needle) }.map(String.init)
    }

    func first(where matches: (Substring) -> Bool) -> Substring? {
        lock.lock()
        defer { lock.unlock() }
        return text.split(separator: "\n").first(where: matches)
    }
}

/// A line to stdout at once (print buffers when stdout is not a terminal, and the runs are long).
private func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
