import PosternTestSupport
import Foundation
import Testing

/// `--tor-options-file` as a user meets it: a line that would open a control port or a public
/// listener is a usage error naming it, and a line tor itself refuses is reported as that.
@Suite struct TorOptionsFileTests {
    /// A settings directory with a tor options file in it.
    struct Sandbox: ~Copyable {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-toropts-\(UUID())")
        var optionsFile: URL { directory.appendingPathComponent("extra.torrc") }

        init(options: String) throws {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try options.write(to: optionsFile, atomically: true, encoding: .utf8)
        }

        deinit { try? FileManager.default.removeItem(at: directory) }

        /// `postern ARGUMENTS --tor-options-file FILE --config-dir DIR`, killed after 60 s at most.
        func run(_ arguments: [String]) async throws -> ProcessResult {
            try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/timeout"),
                                          ["-s", "KILL", "60", ProcessRunner.postern.path] + arguments
                                            + ["--tor-options-file", optionsFile.path, "--config-dir", directory.path])
        }
    }

    @Test(arguments: [["run", "--socks", "auto"], ["bridges", "test", "--bootstrap", "--builtin"],
                      ["ab", "direct", "vanilla", "--trials", "1"]])
    func controlPortLineIsAUsageError(_ command: [String]) async throws {
        let sandbox = try Sandbox(options: "# a test network\nTestingTorNetwork 1\nControlPort 9051\n")
        let result = try await sandbox.run(command)
        #expect(result.status == 64, "\(command): \(result.stderr)")
        #expect(result.stderr.contains("line 3: ControlPort is refused"), "\(result.stderr)")
        #expect(result.stderr.contains("control port"), "\(result.stderr)")
        #expect(!result.stderr.contains("control connection closed"), "\(result.stderr)")
    }

    @Test func publicSocksListenerIsAUsageError() async throws {
        let sandbox = try Sandbox(options: "SocksPort 0.0.0.0:39199\n")
        let result = try await sandbox.run(["run", "--socks", "auto"])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("line 1: SocksPort is refused"), "\(result.stderr)")
        #expect(result.stderr.contains("loopback"), "\(result.stderr)")
    }

    /// tor refuses an option it does not know and exits before its log opens: the error says so
    /// rather than "control connection closed" and a log path that does not exist.
    @Test func optionTorRefusesIsReportedAsSuch() async throws {
        let sandbox = try Sandbox(options: "DisableNetwork 1\nNoSuchTorOption 1\n")
        let result = try await sandbox.run(["run", "--socks", "auto"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("tor refused its configuration"), "\(result.stderr)")
        #expect(result.stderr.contains("POSTERN_TOR_STDERR=1"), "\(result.stderr)")
        #expect(!result.stderr.contains("control connection closed"), "\(result.stderr)")
        #expect(!result.stderr.contains("tor.log"), "names a log tor never wrote: \(result.stderr)")
    }
}
