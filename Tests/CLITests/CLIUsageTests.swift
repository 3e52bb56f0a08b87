import PosternTestSupport
import Foundation
import Testing

/// The CLI as a user meets it: help on every command, usage errors exit 64 on stderr.
@Suite struct CLIUsageTests {
    private func postern(_ arguments: String...) async throws -> ProcessResult {
        try await ProcessRunner.run(ProcessRunner.postern, arguments)
    }

    @Test func topLevelHelpListsCommands() async throws {
        let result = try await postern("--help")
        #expect(result.status == 0)
        #expect(result.stdout.contains("Usage: postern <command>"))
        #expect(result.stdout.contains("run "))
        #expect(result.stdout.contains("status "))
        #expect(result.stderr.isEmpty)
    }

    @Test func runHelpDescribesOptions() async throws {
        let result = try await postern("run", "--help")
        #expect(result.status == 0)
        #expect(result.stdout.contains("Usage: postern run"))
        #expect(result.stdout.contains("--socks [HOST:]PORT"))
        #expect(result.stdout.contains("--stall-timeout SECONDS"))
    }

    @Test func versionNamesTheTorCore() async throws {
        let result = try await postern("--version")
        #expect(result.status == 0)
        #expect(result.stdout.contains("tor 0.4.9.11"))
    }

    @Test(arguments: [["--bogus"], ["run", "--bogus"], ["status", "--nope=1"], ["frobnicate"], ["run", "extra"],
                      ["run", "--socks"], ["run", "--socks", "0.0.0.0:9050"], ["run", "--stall-timeout", "-3"],
                      ["geo"], ["geo", "show", "--near", "91,0"], ["geo", "refresh", "--url", "ftp://x/y"], ["geo", "refresh", "--timeout", "0"]])
    func usageErrorsExit64(_ arguments: [String]) async throws {
        let result = try await ProcessRunner.run(ProcessRunner.postern, arguments)
        #expect(result.status == 64, "\(arguments): \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("postern"))
    }

    @Test func statusWithNothingRunningExits1() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-status-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await postern("status", "--json", "--config-dir", directory.path)
        #expect(result.status == 1)
        #expect(result.stdout.contains(#""running":false"#))
    }
}

/// The tor core build script refuses a tarball whose hash differs from the pinned one.
@Suite struct TorCoreBuildScriptTests {
    @Test func tamperedTarballIsRefused() async throws {
        let script = ProcessRunner.packageRoot.appendingPathComponent("scripts/build-tor-core.sh")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-tamper-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let tampered = directory.appendingPathComponent("tor_0.4.9.11.orig.tar.gz")
        // A tarball-shaped file that is not the pinned one; when the genuine tarball is cached
        // locally, flip one byte of a copy of it instead, which is the sharper test.
        let genuine = ProcessRunner.packageRoot.appendingPathComponent(".deps/tor-build/tor_0.4.9.11.orig.tar.gz")
        var bytes = (try? Data(contentsOf: genuine)) ?? Data(repeating: 0x1f, count: 4096)
        bytes[bytes.count / 2] ^= 0x01
        try bytes.write(to: tampered)

        let prefix = directory.appendingPathComponent("prefix")
        let result = try await ProcessRunner.run(URL(fileURLWithPath: "/bin/bash"),
                                           [script.path, "--tarball", tampered.path, "--prefix", prefix.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("SHA-256 mismatch"))
        #expect(result.stderr.contains("Refusing to build"))
        #expect(!FileManager.default.fileExists(atPath: prefix.path), "nothing may be installed from a bad tarball")

        if FileManager.default.fileExists(atPath: genuine.path) {
            let verified = try await ProcessRunner.run(URL(fileURLWithPath: "/bin/bash"), [script.path, "--verify-only", genuine.path])
            #expect(verified.status == 0, "\(verified.stderr)")
        }
    }
}
