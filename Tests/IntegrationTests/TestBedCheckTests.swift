import PosternTestSupport
import Foundation
import Testing

extension TestBedSuite {
    /// Issue 3: each censor scenario holds for plain Debian tor clients (direct bootstraps under
    /// `none` and not under `block-tor`; vanilla and obfs4 bridge clients get through `block-tor`
    /// and not `block-tor-and-bridges`; under `https-only` only webtunnel; under `shutdown` only
    /// dnstt), proved by the test bed's own self-check. The censors modelled on measurements are
    /// the next test's: the two halves take about two and a half minutes each, and `make test`
    /// runs this one beside the tests that must run alone.
    @Test func censorScenariosHoldForPlainTorClients() throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let result = try ProcessRunner.runBlocking(TestBed.script, ["check", "--dir", bed.directory, "--negative-wait", "12", "--without-models"])
        #expect(result.status == 0, "testbed check failed:\n\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("ok: [block-tor] direct client blocked"), "\(result.stdout)")
        #expect(result.stdout.contains("ok: [block-tor-and-bridges] obfs4 client blocked"), "\(result.stdout)")
        #expect(!result.stdout.contains("[fet]"), "the models are the other test's: \(result.stdout)")
        if bed["TB_WEBTUNNEL"] == "1" {
            // https-only: everything but HTTPS to the web server is dropped, and a stock tor with
            // postern's pt-client gets through it with webtunnel.
            #expect(result.stdout.contains("ok: [https-only] direct client blocked"), "\(result.stdout)")
            #expect(result.stdout.contains("ok: [https-only] webtunnel client: bootstrapped"), "\(result.stdout)")
        }
    }

    /// Issues 21 and 22: the censors modelled on published measurements (fet, freeze, burst) and
    /// the fingerprinting one hold for plain clients: under `fingerprint` OpenSSL's default hello
    /// and Postern's old DTLS server flight are dropped, Firefox's hello and tor's own get through,
    /// and the judge blocked nothing else.
    @Test func censorModelsHoldForPlainTorClients() throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let result = try ProcessRunner.runBlocking(TestBed.script, ["check", "--dir", bed.directory, "--negative-wait", "12",
                                                                    "--only", "fet,freeze,burst,fingerprint"])
        #expect(result.status == 0, "testbed check failed:\n\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("ok: [fet] obfs4 client blocked"), "\(result.stdout)")
        #expect(result.stdout.contains("ok: [freeze] snowflake client: bootstrapped"), "\(result.stdout)")
        #expect(result.stdout.contains("ok: [burst] vanilla client: bootstrapped"), "\(result.stdout)")
        if bed["TB_WEBTUNNEL"] == "1" {
            #expect(result.stdout.contains("ok: [fingerprint] openssl s_client"), "\(result.stdout)")
            #expect(result.stdout.contains("ok: [fingerprint] DTLS:"), "\(result.stdout)")
            #expect(result.stdout.contains("ok: [fingerprint] judge:"), "\(result.stdout)")
        }
    }
}
