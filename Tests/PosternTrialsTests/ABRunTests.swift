import BridgeConfig
import Foundation
import PosternLinkSpec
import Synchronization
import Testing
@testable import PosternTrials

/// `ABRun`: the request's checks, the progress texts, and whole runs of stand-in children (shell
/// scripts given `postern run`'s arguments; no tor, no network).
@Suite struct ABRunTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-abrun-\(UUID())")

    static func direct(_ name: String = "direct") -> TrialRoute { TrialRoute(name: name, bridges: [], timeout: .seconds(20)) }

    func makeRequest(routes: [TrialRoute] = [direct()], trials: Int = 1, executable: URL? = nil) -> ABRun.Request {
        ABRun.Request(routes: routes, trialsPerRoute: trials, parallel: 2, order: .interleaved, seed: 7,
                      history: TrialHistory(directory: directory.appendingPathComponent("ab")),
                      executable: executable ?? URL(fileURLWithPath: "/bin/false"))
    }

    @Test func orderAndNetworkLabelAreValidated() {
        #expect(TrialOrder(rawValue: "interleaved") == .interleaved && TrialOrder(rawValue: "random") == .random)
        #expect(TrialOrder(rawValue: "sideways") == nil && TrialOrder(rawValue: "Random") == nil)
        #expect(NetworkLabel("test-bed block-tor")?.text == "test-bed block-tor")
        #expect(NetworkLabel(String(repeating: "x", count: 64))?.description.count == 64)
        for bad in ["", String(repeating: "x", count: 65), "two\nlines", "cr\r", "tab\t", "esc\u{1B}[31m", "nul\u{0}"] { #expect(NetworkLabel(bad) == nil, "\(bad.debugDescription)") }
        #expect(NetworkLabel("Tehran 🇮🇷 mobile")?.text == "Tehran 🇮🇷 mobile")
    }

    /// Without a seed the request draws one (and the run records it); a given seed is kept.
    @Test func seedIsDrawnUnlessGiven() {
        let history = TrialHistory(directory: directory)
        let drawn = (1...3).map { _ in ABRun.Request(routes: [Self.direct()], trialsPerRoute: 1, parallel: 1, order: .random, history: history).seed }
        #expect(Set(drawn).count == 3)
        #expect(ABRun.Request(routes: [Self.direct()], trialsPerRoute: 1, parallel: 1, order: .random, seed: 0, history: history).seed == 0)
    }

    @Test func requestValidation() throws {
        try makeRequest().validate()
        var cases: [(ABRun.Request, String)] = []
        cases.append((makeRequest(routes: []), "no routes to compare"))
        cases.append((makeRequest(routes: [Self.direct(), Self.direct()]), "the route direct is given twice"))
        cases.append((makeRequest(trials: 0), "a run needs 1 to 1000 trials per route, not 0"))
        // Above the maximums, so that no product or count of a request can overflow.
        cases.append((makeRequest(trials: Int.max), "a run needs 1 to 1000 trials per route, not \(Int.max)"))
        cases.append((makeRequest(routes: (0...64).map { _ in Self.direct() }), "at most 64 routes, not 65"))
        var parallel = makeRequest()
        parallel.parallel = 0
        cases.append((parallel, "a run needs 1 to 64 children at a time, not 0"))
        parallel.parallel = 65
        cases.append((parallel, "a run needs 1 to 64 children at a time, not 65"))
        var retries = makeRequest()
        retries.harnessRetries = -1
        cases.append((retries, "harness retries must be 0 to 10, not -1"))
        var bytes = makeRequest()
        bytes.probeBytes = 0
        cases.append((bytes, "the probe download times 1 to 17179869184 bytes, not 0"))
        bytes.probeBytes = Int.max
        cases.append((bytes, "the probe download times 1 to 17179869184 bytes, not \(Int.max)"))
        for (request, message) in cases {
            #expect(throws: TrialError.self) { try request.validate() }
            do throws(TrialError) { try request.validate() } catch {
                #expect(error.kind == .usage && error.code == .invalidInput && error.message == message, "\(error)")
            }
        }
    }

    /// An invalid request fails before anything is created.
    @Test func invalidRequestCreatesNothing() async {
        let events = Mutex<[String]>([])
        do throws(TrialError) {
            _ = try await ABRun.execute(makeRequest(trials: 0), interruption: {}) { event in events.withLock { $0.append("\(event)") } }
            Issue.record("ran an invalid request")
        } catch {
            #expect(error.kind == .usage)
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path))
        #expect(events.withLock { $0.isEmpty })
    }

    @Test func startAndProgressTexts() {
        let start = ABRun.Start(id: "x", directory: URL(fileURLWithPath: "/tmp/ab/x"),
                                request: makeRequest(routes: [Self.direct("obfs4"), Self.direct("snowflake"), Self.direct()], trials: 5))
        #expect("\(start)" == "15 trials (obfs4, snowflake, direct × 5), 2 at a time, interleaved order, seed 7; results in /tmp/ab/x")

        let finished = [Fixtures.trial(1, "obfs4", attempt: 1, bootstrap: 3.4, probeFirstByte: 0.45),
                        Fixtures.trial(2, "snowflake", attempt: 1, bootstrap: 11, brokeAfter: 65536),
                        Fixtures.trial(3, "direct", attempt: 1, bootstrap: nil)]
        let running = [TrialRunner.Live(label: "obfs4#2", progress: 45, tag: "loading_descriptors"),
                       TrialRunner.Live(label: "snowflake#2", progress: 0, tag: "starting")]
        var progress = ABRun.Progress(total: 15, running: running, finished: finished, justFinished: nil, harnessError: nil)
        #expect(progress.statusLine == "[3/15 done, 1 ok] running: obfs4#2 45% loading_descriptors, snowflake#2 0% starting")
        #expect(progress.finishedTrialLine == nil && progress.harnessErrorLine == nil)
        progress.running = []
        #expect(progress.statusLine == "[3/15 done, 1 ok] running: -")

        progress.justFinished = finished[0]
        #expect(progress.finishedTrialLine == "[3/15] trial 1 obfs4#1: ok, 100% in 3.40 s, probe first byte 0.45 s")
        progress.justFinished = Fixtures.trial(4, "obfs4", attempt: 2, bootstrap: 2.5)
        #expect(progress.finishedTrialLine == "[3/15] trial 4 obfs4#2: ok, 100% in 2.50 s")
        progress.justFinished = finished[1]
        #expect(progress.finishedTrialLine == "[3/15] trial 2 snowflake#1: 100% in 11.00 s, then the download broke "
                + "(the probe download failed: the download stopped after 65536 of 1048576 bytes)")
        progress.justFinished = finished[2]
        #expect(progress.finishedTrialLine == "[3/15] trial 3 direct#1: failed (no 100% within 20 s)")

        progress.harnessError = Fixtures.harnessError(trial: 5, route: "snowflake", try: 1, retried: true)
        #expect(progress.harnessErrorLine == "trial 5 snowflake#1: harness error (child-configuration), trying again: "
                + "127.0.0.1:40001 is already in use by another program")
        progress.harnessError?.retried = false
        #expect(progress.harnessErrorLine?.contains("(child-configuration), given up: ") == true)
    }

    /// A stand-in child: reports milestones and 100% with a SOCKS port, then waits to be stopped.
    private func readyChild() throws -> URL {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let script = directory.appendingPathComponent("ready.sh")
        try """
        #!/bin/sh
        while [ $# -gt 0 ]; do [ "$1" = --events-json ] && EVENTS="$2"; shift; done
        echo '{"event":"start","t":0.1,"wall":1,"pid":1,"route":"direct"}' >> "$EVENTS"
        echo '{"event":"bootstrap","t":0.5,"wall":1,"progress":50,"tag":"loading_descriptors"}' >> "$EVENTS"
        echo '{"event":"ready","t":1.25,"wall":1,"socks":"127.0.0.1:39999"}' >> "$EVENTS"
        exec sleep 30
        """.write(to: script, atomically: true, encoding: .utf8)
        chmod(script.path, 0o755)
        return script
    }

    /// `bridges test --bootstrap`'s batch: each bootstrap in a numbered directory of its own inside
    /// one work directory, which goes with the batch.
    @Test func bootstrapBatchRunsEachBridgeApartAndRemovesItsWorkDirectory() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let line = try BridgeLine.parse("192.0.2.7:443", rules: .syntaxOnly, logging: .safe).line
        let executable = try readyChild()
        func runTwice() async throws -> (URL, [BootstrapCheck], [String]) {
            let batch = BootstrapCheck.Batch(plugins: [], timeout: .seconds(20), torOptionsFile: nil, unsafeLogging: false,
                                             executable: executable)
            async let first = batch.run(through: line)
            async let second = batch.run(through: line)
            let outcomes = await [first, second]
            return (batch.directory, outcomes, try FileManager.default.contentsOfDirectory(atPath: batch.directory.path).sorted())
        }
        let (work, outcomes, children) = try await runTwice()
        #expect(outcomes.allSatisfy { $0.succeeded && $0.milliseconds == 1250 && $0.detail == "100%" }, "\(outcomes)")
        #expect(children == ["bridge-1", "bridge-2"])
        #expect(!FileManager.default.fileExists(atPath: work.path), "the work directory went with the batch")
        let failing = BootstrapCheck.Batch(plugins: [], timeout: .seconds(20), torOptionsFile: nil, unsafeLogging: false,
                                           executable: URL(fileURLWithPath: "/bin/false"))
        #expect(!(await failing.run(through: line)).succeeded)
    }

    /// The whole run: directory created, trials run, result saved with its files, the charts and
    /// OONI files written, the events in order.
    @Test func executeSavesTheRunAndWritesTheRequestedFiles() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        var request = makeRequest(routes: [Self.direct(), Self.direct("obfs4")], trials: 2, executable: try readyChild())
        request.network = NetworkLabel("loopback")
        request.svgFile = directory.appendingPathComponent("charts-copy.svg")
        request.ooni = .init(file: directory.appendingPathComponent("ooni.jsonl"), probe: .init(), softwareVersion: "9.9.9", torVersion: "tor-x")
        let events = Mutex<[String]>([])
        let outcome = try await ABRun.execute(request, interruption: { try? await Task.sleep(for: .seconds(600)) }) { event in
            switch event {
            case .started(let start): events.withLock { $0.append("started \(start.request.total)") }
            case .progress(let progress): if let line = progress.finishedTrialLine { events.withLock { $0.append(line) } }
            case .interrupting: events.withLock { $0.append("interrupting") }
            case .trialsFinished: events.withLock { $0.append("finished") }
            }
        }
        let result = outcome.result
        #expect(!outcome.wasInterrupted && outcome.interruptionNote == nil && outcome.cutShort == 0 && outcome.total == 4)
        #expect(result.trials.count == 4 && result.trials.allSatisfy(\.succeeded))
        #expect(result.trials.map(\.bootstrapSeconds) == [1.25, 1.25, 1.25, 1.25])
        #expect(result.network == "loopback" && result.order == "interleaved" && result.seed == 7 && result.routes == ["direct", "obfs4"])
        let run = URL(fileURLWithPath: result.directory)
        #expect(run.deletingLastPathComponent().path == directory.appendingPathComponent("ab").path)
        for file in ["result.json", "trials.csv", "charts.svg", "report.html"] {
            #expect(FileManager.default.fileExists(atPath: run.appendingPathComponent(file).path), "\(file)")
        }
        #expect(try TrialHistory.loadRun(at: run).trials.count == 4)
        #expect(try String(contentsOf: request.svgFile!, encoding: .utf8) == result.svg)
        let ooni = try String(contentsOf: request.ooni!.file, encoding: .utf8).split(separator: "\n")
        #expect(ooni.count == 4 && ooni.allSatisfy { $0.contains("\"software_version\":\"9.9.9\"") })
        let seen = events.withLock { $0 }
        #expect(seen.first == "started 4" && seen.last == "finished")
        #expect(seen.filter { $0.contains(": ok, 100% in 1.25 s") }.count == 4, "\(seen)")
        #expect(!seen.contains("interrupting"))
        // No warm caches or stand-in children left.
        #expect(try FileManager.default.contentsOfDirectory(atPath: run.path).allSatisfy { !$0.hasPrefix(".cache-") })
    }

    /// An interruption stops the running children; the trials cut short are left out and said so.
    @Test func interruptionStopsTheChildrenAndKeepsTheRun() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let script = directory.appendingPathComponent("slow.sh")
        // Each child leaves a mark when it starts, so that the interruption comes once both run
        // (the runner starts the second a little after the first; a timer would race it).
        try "#!/bin/sh\ntouch \"$0.started.$$\"\nexec sleep 60\n".write(to: script, atomically: true, encoding: .utf8)
        chmod(script.path, 0o755)
        let interrupting = Mutex(0)
        let started = ContinuousClock.now
        let bothRunning: @Sendable () async -> Void = { [directory] in
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline {
                let marks = (try? FileManager.default.contentsOfDirectory(atPath: directory.path))?.filter { $0.hasPrefix("slow.sh.started.") }
                if (marks?.count ?? 0) >= 2 { return }
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
        let outcome = try await ABRun.execute(makeRequest(trials: 2, executable: script), interruption: bothRunning) {
            if case .interrupting = $0 { interrupting.withLock { $0 += 1 } }
        }
        #expect(ContinuousClock.now - started < .seconds(30), "the children were stopped, not waited for")
        #expect(interrupting.withLock { $0 } == 1)
        #expect(outcome.wasInterrupted && outcome.result.trials.isEmpty && outcome.cutShort == 2)
        #expect(outcome.interruptionNote == "interrupted after 0 of 2 trials (2 cut short and left out); the finished ones are kept above and in "
                + outcome.result.directory)
        #expect(FileManager.default.fileExists(atPath: URL(fileURLWithPath: outcome.result.directory).appendingPathComponent("result.json").path))
    }

    /// A charts file that cannot be written is its own error code, after the result is saved.
    @Test func unwritableChartsFileIsItsOwnError() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        var request = makeRequest(executable: try readyChild())
        request.svgFile = directory.appendingPathComponent("missing-directory/charts.svg")
        do throws(TrialError) {
            _ = try await ABRun.execute(request, interruption: { try? await Task.sleep(for: .seconds(600)) }) { _ in }
            Issue.record("wrote into a missing directory")
        } catch {
            #expect(error.code == .chartsFile && error.kind == .failure, "\(error)")
            #expect(error.message.contains("missing-directory"), "\(error.message)")
        }
        let runs = TrialHistory(directory: directory.appendingPathComponent("ab")).load()
        #expect(runs.count == 1 && runs.first?.trials.count == 1)
    }
}
