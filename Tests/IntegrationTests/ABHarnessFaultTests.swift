import BridgeConfig
import Foundation
import PosternLinkSpec
import PosternRuntime
import PosternTestSupport
import PosternTrials
import Testing

extension TestBedSuite {
    /// Issue 15: the harness's faults are not the route's. A port collision is planted (the first
    /// four children of obfs4 are told to bind a SOCKS port this test holds, which is what the old
    /// pick-release-bind harness produced when another program took the port in between): those
    /// tries are harness errors, retried, kept apart; obfs4 and direct both got through every
    /// trial they ran, and the verdict is the one the same trials give without the harness errors.
    @Test func abPlantedPortCollisionIsAHarnessErrorAndLeavesTheVerdictAlone() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("none")
        let directory = TestBed.temporaryDirectory("ab-harness")
        defer { try? FileManager.default.removeItem(at: directory) }
        let obfs4 = try BridgeLine(validating: bed["TB_BRIDGE_OBFS4"], rules: Transports.argumentRules)
        let holder = try HeldLoopbackPort()

        let plan = TrialRunner.Plan(
            routes: [TrialRoute(name: "obfs4", bridges: [obfs4], timeout: .seconds(90)),
                     TrialRoute(name: "direct", bridges: [], timeout: .seconds(60))],
            trialsPerRoute: 3, parallel: 2, randomOrder: false, seed: 15, warm: false, probe: nil,
            torOptionsFile: bed["TB_CLIENT_TORRC"], unsafeLogging: false, directory: directory, executable: ProcessRunner.postern,
            harnessRetries: 2, plantedFaults: .init(route: "obfs4", occupiedPort: holder.port, tries: 4))
        let runner = TrialRunner(plan: plan) { _, _, _, _ in }
        let outcome = await runner.run()

        let errors = outcome.harnessErrors
        #expect(errors.count == 4, "every planted collision is a harness error: \(errors)")
        #expect(errors.allSatisfy { $0.route == "obfs4" && $0.code == .childConfiguration && $0.message.contains("already in use") },
                "\(errors.map(\.message))")
        let givenUp = errors.filter { !$0.retried }
        #expect(givenUp.allSatisfy { $0.attemptTry == 3 }, "a trial is given up only after its third try")
        let obfs4Trials = outcome.trials.filter { $0.route == "obfs4" }
        #expect(obfs4Trials.count + givenUp.count == 3, "every obfs4 trial has a result or was given up")
        let reasons = obfs4Trials.compactMap { $0.failure?.reason }
        #expect(obfs4Trials.allSatisfy { $0.succeeded }, "no harness error is counted against obfs4: \(reasons)")
        #expect(obfs4Trials.contains { ($0.harnessRetries ?? 0) > 0 } || givenUp.count == 1)
        #expect(outcome.trials.filter { $0.route == "direct" }.count == 3 && outcome.trials.allSatisfy { $0.succeeded })

        let result = ABResult(id: "planted", startedAt: Date(), finishedAt: Date(), routes: ["obfs4", "direct"], trialsPerRoute: 3,
                              parallel: 2, order: "interleaved", seed: 15, warm: false, probeURL: nil, probeBytes: 0,
                              directory: directory.path, trials: outcome.trials, harnessErrors: errors)
        let withoutHarness = ABResult(id: "planted", startedAt: Date(), finishedAt: Date(), routes: ["obfs4", "direct"], trialsPerRoute: 3,
                                      parallel: 2, order: "interleaved", seed: 15, warm: false, probeURL: nil, probeBytes: 0,
                                      directory: directory.path, trials: outcome.trials)
        #expect(result.summaries.allSatisfy { $0.successRate == 1 }, "both routes are fully reliable")
        #expect(result.summaries.first { $0.route == "obfs4" }?.harnessErrors == 4)
        #expect(result.best == withoutHarness.best)
        #expect(Array(result.verdict.dropLast()) == withoutHarness.verdict, "the verdict is unchanged:\n\(result.verdict)\n\(withoutHarness.verdict)")
        #expect(result.verdict.last?.contains("failed for reasons of the harness, not the route") == true)
        #expect(!result.verdict.contains { $0.contains("(the most reliable)") }, "neither route is more reliable than the other")
        // The planted tries' children never got a core going; nothing of theirs is left running.
        let leftovers = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/pgrep"), ["-f", directory.path])
        #expect(leftovers.stdout.isEmpty, "children still running: \(leftovers.stdout)")
    }
}
