import PosternTestSupport
import Foundation
import Testing

extension TestBedSuite {
    /// Issue 3: each censor scenario holds for plain Debian tor clients (direct bootstraps under
    /// `none` and not under `block-tor`; vanilla and obfs4 bridge clients get through `block-tor`
    /// and not `block-tor-and-bridges`), proved by the test bed's own self-check.
    @Test func censorScenariosHoldForPlainTorClients() throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let result = try ProcessRunner.run(TestBed.script, ["check", "--dir", bed.directory, "--negative-wait", "12"])
        #expect(result.status == 0, "testbed check failed:\n\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("block-tor"))
    }
}
