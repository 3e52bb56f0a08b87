import PosternTestSupport
import Foundation
import Testing

extension TestBedSuite {
    /// Issue 3: each censor scenario holds for plain Debian tor clients (direct bootstraps under
    /// `none` and not under `block-tor`; vanilla and obfs4 bridge clients get through `block-tor`
    /// and not `block-tor-and-bridges`; under `https-only` only webtunnel; under `fingerprint`
    /// OpenSSL's default hello is dropped and Firefox's passes), proved by the test bed's own
    /// self-check.
    @Test func censorScenariosHoldForPlainTorClients() throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let result = try ProcessRunner.runBlocking(TestBed.script, ["check", "--dir", bed.directory, "--negative-wait", "12"])
        #expect(result.status == 0, "testbed check failed:\n\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("block-tor"))
        if bed["TB_WEBTUNNEL"] == "1" {
            // https-only: everything but HTTPS to the web server is dropped, and a stock tor with
            // postern's pt-client gets through it with webtunnel.
            #expect(result.stdout.contains("ok: [https-only] direct client blocked"), "\(result.stdout)")
            #expect(result.stdout.contains("ok: [https-only] webtunnel client: bootstrapped"), "\(result.stdout)")
            // fingerprint (issue #21): OpenSSL's default hello and Postern's DTLS server flight are
            // dropped, Firefox's hello and tor's own get through, and the judge blocked nothing else.
            #expect(result.stdout.contains("ok: [fingerprint] openssl s_client"), "\(result.stdout)")
            #expect(result.stdout.contains("ok: [fingerprint] DTLS:"), "\(result.stdout)")
            #expect(result.stdout.contains("ok: [fingerprint] judge:"), "\(result.stdout)")
        }
    }
}
