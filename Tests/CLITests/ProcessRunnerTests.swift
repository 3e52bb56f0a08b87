import Foundation
import PosternTestSupport
import Testing

/// The test runner's own waits on children.
@Suite struct ProcessRunnerTests {
    /// A child that leaves a background job behind: the job inherits the socket by which
    /// Foundation learns of the child's exit, so Foundation does not notice the exit until the
    /// job ends (here 30 s). The runner reaps the child itself after the grace.
    @Test func aChildWhoseBackgroundJobOutlivesItIsStillReaped() throws {
        let started = Date()
        let result = try ProcessRunner.runBlocking(URL(fileURLWithPath: "/bin/sh"),
                                                   ["-c", "sleep 30 </dev/null >/dev/null 2>&1 & echo left; exit 3"], exitNoticeGrace: 2)
        #expect(result.status == 3 && result.stdout == "left\n")
        #expect(Date().timeIntervalSince(started) < 20, "took \(Date().timeIntervalSince(started)) s")
    }

    @Test func exitStatusesAndSignalsAreReportedAsBefore() throws {
        #expect(try ProcessRunner.runBlocking(URL(fileURLWithPath: "/bin/sh"), ["-c", "exit 64"]).status == 64)
        #expect(try ProcessRunner.runBlocking(URL(fileURLWithPath: "/bin/sh"), ["-c", "kill -9 $$"]).status == 9)
    }
}
