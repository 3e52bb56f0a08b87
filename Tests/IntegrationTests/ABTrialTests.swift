import PosternTestSupport
import Foundation
import Testing

extension TestBedSuite {
    /// Issue 8: `postern ab obfs4 snowflake direct` under block-tor. Direct must fail every trial,
    /// both transports must get through, and the JSON must agree with what each child process wrote
    /// in its own events file (kept in the run's directory).
    @Test func abTrialsCompareRoutesUnderBlockTor() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let snowflake = bed["TB_BRIDGE_SNOWFLAKE"]
        try #require(!snowflake.isEmpty, "the test bed's snowflake stack is not up")
        try bed.setCensor("block-tor")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("ab")
        defer { try? FileManager.default.removeItem(at: config) }
        let add = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "add", "--config-dir", config.path,
                                                                bed["TB_BRIDGE_OBFS4"], snowflake])
        try #require(add.status == 0, "bridges add: \(add.stdout) \(add.stderr)")
        let svgFile = config.appendingPathComponent("chart.svg")
        let ooniFile = config.appendingPathComponent("trials.ooni.jsonl")

        let started = ContinuousClock.now
        let run = try await ProcessRunner.run(ProcessRunner.postern, [
            "ab", "obfs4", "snowflake", "direct", "--trials", "5", "--parallel", "3", "--seed", "8",
            "--trial-timeout", "direct=20", "--trial-timeout", "90",
            "--probe-url", bed["TB_BLOB_URL"], "--probe-bytes", "1048576",
            "--tor-options-file", bed["TB_CLIENT_TORRC"], "--svg", svgFile.path, "--ooni", ooniFile.path, "--probe-cc", "ZZ",
            "--network", "test-bed block-tor", "--json", "--config-dir", config.path])
        let elapsed = ContinuousClock.now - started
        print("postern ab (15 trials, 3 at a time) took \(elapsed)\n\(run.stderr)")
        try #require(run.status == 0, "postern ab failed: \(run.stderr)")
        #expect(elapsed < .seconds(240), "the run should fit the budget")

        // The human report went to stderr (stdout holds the JSON).
        #expect(run.stderr.contains("ROUTE") && run.stderr.contains("100% BY TRIAL"), "the table is printed")
        #expect(run.stderr.contains("direct never got through (0 of 5)"), "the verdict names the blocked route")

        let json = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let directory = URL(fileURLWithPath: try #require(json["directory"] as? String))
        let trials = try #require(json["trials"] as? [[String: Any]])
        #expect(trials.count == 15)
        let summaries = try #require(json["summaries"] as? [[String: Any]])
        func summary(_ route: String) -> [String: Any] { summaries.first { $0["route"] as? String == route } ?? [:] }
        #expect(summary("direct")["successes"] as? Int == 0, "direct is blocked")
        #expect(summary("obfs4")["successes"] as? Int == 5, "obfs4 gets through every time: \(summary("obfs4"))")
        #expect((summary("snowflake")["successes"] as? Int ?? 0) >= 4, "snowflake gets through: \(summary("snowflake"))")

        // Interleaved order: obfs4, snowflake, direct, obfs4, ...
        let routesInOrder = trials.sorted { ($0["index"] as? Int ?? 0) < ($1["index"] as? Int ?? 0) }.compactMap { $0["route"] as? String }
        #expect(Array(routesInOrder.prefix(6)) == ["obfs4", "snowflake", "direct", "obfs4", "snowflake", "direct"])

        // Every figure in the JSON is the one the child wrote in its own events file.
        var bootstrapByRoute: [String: [Double]] = [:]
        for trial in trials {
            let route = trial["route"] as? String ?? "?"
            let eventsPath = directory.appendingPathComponent(try #require(trial["eventsFile"] as? String))
            let text = try String(contentsOf: eventsPath, encoding: .utf8)
            let events = text.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            #expect(!events.isEmpty, "the child of trial \(trial["index"] ?? "?") wrote events")
            func time(of name: String) -> Double? { events.first { $0["event"] as? String == name }?["t"] as? Double }
            let milestones = trial["milestones"] as? [[String: Any]] ?? []
            let bootstrapEvents = events.filter { $0["event"] as? String == "bootstrap" }
            #expect(milestones.count == bootstrapEvents.count)
            for (milestone, event) in zip(milestones, bootstrapEvents) {
                #expect(milestone["progress"] as? Int == event["progress"] as? Int)
                #expect(milestone["tag"] as? String == event["tag"] as? String)
                #expect(milestone["seconds"] as? Double == event["t"] as? Double)
            }
            let progresses = bootstrapEvents.compactMap { $0["progress"] as? Int }
            #expect(progresses == progresses.sorted(), "milestones only go up")
            if let ready = time(of: "ready") { bootstrapByRoute[route, default: []].append(ready) }
            if trial["succeeded"] as? Bool == true {
                let ready = try #require(time(of: "ready"), "a successful trial's child reported ready")
                // The child bound its own SOCKS port and said which; the probe used that one.
                let readySocks = events.first { $0["event"] as? String == "ready" }?["socks"] as? String ?? ""
                #expect(readySocks == "127.0.0.1:\(trial["socksPort"] as? Int ?? -1)", "the trial's port is the child's: \(readySocks)")
                // Its status (run --json, kept as child.log) names the bound port too, not "auto".
                let childLog = (try? String(contentsOf: eventsPath.deletingLastPathComponent().appendingPathComponent("child.log"), encoding: .utf8)) ?? ""
                let readyStatus = childLog.split(separator: "\n").first { $0.contains("\"isReady\":true") } ?? ""
                #expect(readyStatus.contains("\"socks\":\"\(readySocks)\""), "the child's ready status: \(readyStatus)")
                #expect(trial["bootstrapSeconds"] as? Double == ready)
                #expect(progresses.last == 100)
                let firstByte = try #require(time(of: "first-byte"))
                #expect(trial["firstByteSeconds"] as? Double == firstByte)
                #expect(firstByte <= ready)
                if route != "direct" {
                    let source = events.first { $0["event"] as? String == "first-byte" }?["source"] as? String ?? ""
                    #expect(source == "\(route) connected", "the first byte of a PT route is its handshake: \(source)")
                }
                #expect((trial["probeFirstByteSeconds"] as? Double ?? 0) > 0)
                #expect(trial["probeBytes"] as? Int == 1_048_576)
                #expect((trial["throughputBytesPerSecond"] as? Double ?? 0) > 0)
            } else if let failure = trial["failure"] as? [String: Any], failure["stage"] as? String == "after-bootstrap" {
                // 100 %, then the download broke: the route's failure, after bootstrap.
                #expect(trial["bootstrapSeconds"] as? Double == time(of: "ready"))
                #expect(failure["progress"] as? Int == 100 && failure["probe"] is String)
            } else {
                #expect(time(of: "ready") == nil && trial["bootstrapSeconds"] == nil)
                let failure = try #require(trial["failure"] as? [String: Any])
                #expect(failure["progress"] as? Int == progresses.last, "the failure names where the child stalled")
                #expect(!(failure["reason"] as? String ?? "").isEmpty)
            }
        }
        // The summary medians are the medians of the children's own times to 100% (n = 5: the middle one).
        for route in ["obfs4", "snowflake"] {
            let values = (bootstrapByRoute[route] ?? []).sorted()
            guard values.count % 2 == 1 else { continue }
            let median = (summary(route)["bootstrap"] as? [String: Any])?["median"] as? Double
            #expect(median == values[values.count / 2], "\(route) median")
        }
        let comparisons = json["comparisons"] as? [[String: Any]] ?? []
        #expect(comparisons.contains { $0["figure"] as? String == "bootstrap" && $0["first"] as? String == "obfs4"
            && $0["second"] as? String == "snowflake" && $0["p"] is Double })

        // The charts: time to 100%, probe first byte and throughput side by side, a box for each
        // route that got through in each, "no data" for direct.
        let svg = try String(contentsOf: svgFile, encoding: .utf8)
        #expect(svg.hasPrefix("<?xml") && svg.contains("<svg"))
        #expect(svg.components(separatedBy: "class=\"panel\"").count - 1 == 3)
        #expect(svg.components(separatedBy: "class=\"box\"").count - 1 == 6)
        #expect(svg.components(separatedBy: ">no data<").count - 1 == 3)
        for file in ["trials.csv", "charts.svg", "report.html"] {
            #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent(file).path), "\(file)")
        }
        #expect(json["network"] as? String == "test-bed block-tor")
        #expect((json["harnessErrors"] as? [Any])?.isEmpty == true, "no harness errors: \(json["harnessErrors"] ?? "")")

        // One OONI measurement per trial, valid against the schema.
        let measurements = try String(contentsOf: ooniFile, encoding: .utf8).split(separator: "\n")
        #expect(measurements.count == 15)
        let schema = ProcessRunner.packageRoot.appendingPathComponent("Tests/PosternTrialsTests/Schemas/ooni-tor-measurement.schema.json")
        let validation = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", """
            import json, sys, jsonschema
            validator = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))
            errors = [e.message for line in open(sys.argv[2]) for e in validator.iter_errors(json.loads(line))]
            print("\\n".join(errors)); sys.exit(1 if errors else 0)
            """, schema.path, ooniFile.path])
        #expect(validation.status == 0, "\(validation.stdout)\(validation.stderr)")
        #expect(measurements.filter { $0.contains("\"test_name\":\"torsf\"") }.count == 5)

        // Kept in history, mode 0600.
        let resultFile = directory.appendingPathComponent("result.json")
        let attributes = try FileManager.default.attributesOfItem(atPath: resultFile.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let history = try await ProcessRunner.run(ProcessRunner.postern, ["ab", "history", "--json", "--config-dir", config.path])
        #expect(history.status == 0)
        #expect(history.stdout.contains(directory.lastPathComponent))

        // No bridge data in anything printed or kept.
        var kept = run.stdout + run.stderr + ((try? String(contentsOf: ooniFile, encoding: .utf8)) ?? "")
        kept += (try? String(contentsOf: directory.appendingPathComponent("report.html"), encoding: .utf8)) ?? ""
        for trial in trials {
            if let file = trial["eventsFile"] as? String {
                kept += (try? String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)) ?? ""
            }
        }
        for secret in TestBed.bridgeSecrets(bed["TB_BRIDGE_OBFS4"]) + TestBed.bridgeSecrets(snowflake) {
            #expect(!kept.contains(secret), "bridge data leaked into the output or the events")
        }
    }
}
