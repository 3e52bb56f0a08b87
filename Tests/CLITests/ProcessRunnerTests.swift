import Foundation
import PosternTestSupport
import Testing

/// The test runner's own waits on children.
@Suite struct ProcessRunnerTests {
    /// A child that leaves a background job behind: the job inherits the socket by which
    /// Foundation learns of the child's exit, so Foundation does not notice the exit until the
    /// job ends (here 30 s). The runner reaps the child itself after the grace.
    @Test func aChildWhoseBackgroundJobOutlivesItIsStillReaped() async throws {
        let started = Date()
        let result = try await ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"),
                                                 ["-c", "sleep 30 </dev/null >/dev/null 2>&1 & echo left; exit 3"], exitNoticeGrace: 2)
        #expect(result.status == 3 && result.stdout == "left\n")
        #expect(Date().timeIntervalSince(started) < 20, "took \(Date().timeIntervalSince(started)) s")
    }

    /// Issue #24: TLSTestBedTests.frontedPollChecksTheFrontsCertificate failed a full run after
    /// 32 s ("the TLS server did not finish its handshake in time", a 20 s deadline) while the
    /// broker answers in milliseconds. Synchronous tests that ran `postern` through `runBlocking`
    /// held the cooperative pool's two threads, and every async test of the same process waited:
    /// the TLS suite took 17.5 s beside CLITests instead of 0.7 s alone. Outside IntegrationTests
    /// (whose test-bed suites run one per process) no test may block the pool on a child.
    @Test func testsOutsideTheTestBedRunChildrenOffThePool() throws {
        let tests = ProcessRunner.packageRoot.appendingPathComponent("Tests")
        let blocking = "runBlocking" + "("
        var offenders: [String] = []
        let files = try #require(FileManager.default.enumerator(at: tests, includingPropertiesForKeys: nil))
        for case let file as URL in files where file.pathExtension == "swift" {
            let relative = String(file.path.dropFirst(tests.path.count + 1))
            // OtherLocalAccount runs useradd once per process, under a lock a synchronous caller shares.
            if relative.hasPrefix("IntegrationTests/") || relative == "Support/PosternTestSupport/ProcessRunner.swift"
                || relative == "Support/PosternTestSupport/OtherLocalAccount.swift" { continue }
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            for (number, line) in lines.enumerated() where line.contains(blocking) {
                offenders.append("\(relative):\(number + 1)")
            }
        }
        #expect(offenders.isEmpty, "use `await ProcessRunner.run` in: \(offenders.joined(separator: ", "))")
    }

    @Test func exitStatusesAndSignalsAreReportedAsBefore() async throws {
        #expect(try await ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), ["-c", "exit 64"]).status == 64)
        #expect(try await ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), ["-c", "kill -9 $$"]).status == 9)
    }
}
