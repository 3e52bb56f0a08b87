import Foundation
import PosternTestSupport
import Testing
@testable import PosternTrials

/// What a child's end says about whose fault it was. Real processes, no network: stand-in
/// children (shell scripts that behave as a broken harness would) and the real `postern run`
/// refused a SOCKS port that is taken.
@Suite struct HarnessClassificationTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-harness-\(UUID())")

    /// A stand-in child: a shell script given the same arguments as `postern run`; `body` sees the
    /// events file as $EVENTS.
    private func child(_ name: String, _ body: String) throws -> URL {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let script = directory.appendingPathComponent("\(name).sh")
        let text = """
        #!/bin/sh
        while [ $# -gt 0 ]; do [ "$1" = --events-json ] && EVENTS="$2"; shift; done
        \(body)
        """
        try text.write(to: script, atomically: true, encoding: .utf8)
        chmod(script.path, 0o755)
        return script
    }

    private func outcome(_ executable: URL, socks: String = "127.0.0.1:auto") async throws -> ChildRun.Outcome {
        let run = try ChildRun(.init(directory: directory.appendingPathComponent("run-\(UUID())"), transport: "direct", bridges: [],
                                     executable: executable, socks: socks))
        let outcome = await run.waitForReady(timeout: .seconds(30))
        await run.stop()
        return outcome
    }

    @Test func aChildThatNeverStartsIsTheHarnesss() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let silent = try child("silent", "exit 3")
        guard case .failed(_, let code) = try await outcome(silent) else { Issue.record("not a failure"); return }
        #expect(code == .childStart)
    }

    @Test func aCrashIsTheHarnesss() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let crash = try child("crash", #"echo '{"event":"start","t":0.1,"wall":1,"pid":1,"route":"direct"}' >> "$EVENTS"; kill -SEGV $$"#)
        guard case .failed(let reason, let code) = try await outcome(crash) else { Issue.record("not a failure"); return }
        #expect(code == .childCrashed, "\(reason)")
    }

    @Test func refusedArgumentsAreTheHarnesss() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let usage = try child("usage", "exit 64")
        guard case .failed(_, let code) = try await outcome(usage) else { Issue.record("not a failure"); return }
        #expect(code == .childUsage)
    }

    @Test func aReadyWithoutAPortIsTheHarnesss() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let noPort = try child("noport", #"echo '{"event":"ready","t":2.5,"wall":1,"socks":"127.0.0.1:auto"}' >> "$EVENTS"; exec sleep 30"#)
        guard case .failed(_, let code) = try await outcome(noPort) else { Issue.record("not a failure"); return }
        #expect(code == .noSocksPort)
    }

    /// A route's failure stays the route's: tor failed while bootstrapping, or the child exited
    /// after it had started its run.
    @Test func aRouteFailureIsNotTheHarnesss() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let torFailed = try child("torfailed", #"""
        echo '{"event":"start","t":0.1,"wall":1}' >> "$EVENTS"
        echo '{"event":"bootstrap","t":0.2,"wall":1,"progress":5,"tag":"conn"}' >> "$EVENTS"
        echo '{"event":"failed","t":3,"wall":1,"message":"tor exited unexpectedly with status 1","code":"tor-exited"}' >> "$EVENTS"
        exit 1
        """#)
        guard case .failed(_, let code) = try await outcome(torFailed) else { Issue.record("not a failure"); return }
        #expect(code == nil)
        let exited = try child("exited", #"echo '{"event":"start","t":0.1,"wall":1}' >> "$EVENTS"; exit 1"#)
        guard case .failed(_, let exitCode) = try await outcome(exited) else { Issue.record("not a failure"); return }
        #expect(exitCode == nil)
        let ready = try child("ready", #"echo '{"event":"ready","t":2.5,"wall":1,"socks":"127.0.0.1:40123"}' >> "$EVENTS"; exec sleep 30"#)
        #expect(try await outcome(ready) == .ready(socksPort: 40123))
    }

    /// The planted collision with the real `postern run`: a SOCKS port another program holds. The
    /// child says so in a `failed` event with the code invalid-configuration, which is the
    /// harness's fault (what the old parent-picks-a-port harness produced, blamed on the route).
    @Test func aTakenSocksPortIsTheHarnesss() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let holder = try HeldLoopbackPort()
        guard case .failed(let reason, let code) = try await outcome(ProcessRunner.postern, socks: "127.0.0.1:\(holder.port)") else {
            Issue.record("the child did not fail on a taken port")
            return
        }
        #expect(code == .childConfiguration, "\(reason)")
        #expect(reason.contains("already in use"), "\(reason)")
    }

    /// Nothing to prepare the child's directory in: the harness's, before any child starts.
    @Test func anUnwritableDirectoryIsTheHarnesss() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("a-file")
        try Data().write(to: file)
        #expect(throws: TrialError.self) {
            _ = try ChildRun(.init(directory: file.appendingPathComponent("child"), transport: "direct", bridges: [],
                                   executable: ProcessRunner.postern))
        }
    }
}
