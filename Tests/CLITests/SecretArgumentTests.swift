import Foundation
import PosternTestSupport
import Testing

/// Secrets on the command line (issue 12, item 6): bridge lines and Nostr messages given as
/// arguments land in /proc/PID/cmdline, readable by every local user. They still work, with a
/// warning on stderr that names the way that does not leak (standard input or a file); that way
/// gives no warning, and `--help` documents it first.
@Suite struct SecretArgumentTests {
    typealias Sandbox = SettingsCommandTests.Sandbox
    static let recipient = String(repeating: "ab", count: 32)

    private func expectWarning(_ stderr: String, naming instead: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(stderr.contains("warning:") && stderr.contains("/proc/PID/cmdline") && stderr.contains(instead),
                "\(stderr)", sourceLocation: sourceLocation)
        SettingsCommandTests.expectNoSecrets(stderr, sourceLocation: sourceLocation)
    }

    @Test func bridgesAddWarnsForArgumentsOnly() async throws {
        let sandbox = Sandbox()
        let argument = try await sandbox.run("bridges", "add", SettingsCommandTests.line1)
        #expect(argument.status == 0, "\(argument.stderr)")
        expectWarning(argument.stderr, naming: "postern bridges add -")
        let stdin = try await sandbox.run("bridges", "add", "-", stdin: SettingsCommandTests.line2 + "\n")
        #expect(stdin.status == 0)
        #expect(!stdin.stderr.contains("warning"), "\(stdin.stderr)")
        let help = try await sandbox.run("bridges", "add", "--help")
        #expect(help.stdout.contains("- | --file FILE | LINE..."), "\(help.stdout)")
        #expect(help.stdout.contains("/proc/PID/cmdline"))
    }

    @Test func runWarnsForBridgeArgumentsAndReadsBridgesFiles() async throws {
        let sandbox = Sandbox()
        // --transport no-such! is a usage error found after the bridges are read: nothing starts.
        let argument = try await sandbox.run("run", "--bridge", SettingsCommandTests.line1, "--transport", "no-such!")
        #expect(argument.status == 64)
        expectWarning(argument.stderr, naming: "--bridges-file")
        let file = try sandbox.write("# this run's bridges\nBridge \(SettingsCommandTests.line1)\n\n\(SettingsCommandTests.line2)\n", named: "run-bridges.txt")
        let fromFile = try await sandbox.run("run", "--bridges-file", file.path, "--transport", "no-such!")
        #expect(fromFile.status == 64)
        #expect(!fromFile.stderr.contains("warning"), "\(fromFile.stderr)")
        #expect(fromFile.stderr.contains("--transport"), "\(fromFile.stderr)")
        let fromStdin = try await sandbox.run(["run", "--bridges-file", "-", "--transport", "no-such!"], stdin: SettingsCommandTests.line1 + "\n")
        #expect(fromStdin.status == 64 && !fromStdin.stderr.contains("warning"), "\(fromStdin.stderr)")
        // A bad line is named by its number, without its secrets.
        let bad = try sandbox.write("\(SettingsCommandTests.line1)\nobfs4 192.0.2.9:443 cert=short\n", named: "bad.txt")
        let rejected = try await sandbox.run("run", "--bridges-file", bad.path, "--transport", "no-such!")
        #expect(rejected.status == 64)
        #expect(rejected.stderr.contains("line 2"), "\(rejected.stderr)")
        SettingsCommandTests.expectNoSecrets(rejected.stderr)
        let empty = try sandbox.write("# nothing\n", named: "empty.txt")
        let none = try await sandbox.run("run", "--bridges-file", empty.path, "--transport", "no-such!")
        #expect(none.status == 64 && none.stderr.contains("no bridge lines"), "\(none.stderr)")
        let help = try await sandbox.run("run", "--help")
        #expect(help.stdout.contains("--bridges-file"))
    }

    @Test func nostrSendWarnsForAMessageArgumentOnly() async throws {
        let sandbox = Sandbox()
        // --timeout 0 is a usage error found after the message is read: nothing is sent.
        let argument = try await sandbox.run("nostr", "send", "--to", Self.recipient, "meet at noon", "--timeout", "0")
        #expect(argument.status == 64)
        expectWarning(argument.stderr, naming: "--message-file")
        let stdin = try await sandbox.run(["nostr", "send", "--to", Self.recipient, "-", "--timeout", "0"], stdin: "meet at noon\n")
        #expect(stdin.status == 64)
        #expect(!stdin.stderr.contains("warning"), "\(stdin.stderr)")
        let file = try sandbox.write("meet at noon\n", named: "message.txt")
        let fromFile = try await sandbox.run("nostr", "send", "--to", Self.recipient, "--message-file", file.path, "--timeout", "0")
        #expect(fromFile.status == 64 && !fromFile.stderr.contains("warning"), "\(fromFile.stderr)")
        let both = try await sandbox.run("nostr", "send", "--to", Self.recipient, "--message-file", file.path, "text")
        #expect(both.status == 64)
        let emptyMessage = try await sandbox.run(["nostr", "send", "--to", Self.recipient, "-"], stdin: "\n")
        #expect(emptyMessage.status == 64 && emptyMessage.stderr.contains("empty"), "\(emptyMessage.stderr)")
        let missing = try await sandbox.run("nostr", "send", "--to", Self.recipient, "--message-file", "/nonexistent/message")
        #expect(missing.status == 1, "\(missing.stderr)")
        let help = try await sandbox.run("nostr", "send", "--help")
        #expect(help.stdout.contains("--message-file") && help.stdout.contains("/proc/PID/cmdline"), "\(help.stdout)")
    }
}
