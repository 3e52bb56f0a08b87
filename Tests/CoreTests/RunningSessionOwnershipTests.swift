import Foundation
import Testing
import PosternAppLayer
import PosternCore
import PosternTestSupport
@testable import PosternRuntime

/// Attaching to a `postern run` proves from the kernel that the status file's process holds the
/// SOCKS listener it names, under our uid (issue #24, item 7). The stranger is a real second local
/// account listening on loopback, as after a SIGKILLed run whose port and pid were taken.
@Suite(.enabled(if: OtherLocalAccount.isAvailable, "needs root to create a second local account"))
struct RunningSessionOwnershipTests {
    private static func statusFile(pid: Int32, port: UInt16) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-ownership-\(UUID().uuidString.prefix(8))")
        let file = directory.appendingPathComponent("run-status.json")
        var record = RunStatusRecord(pid: pid, status: TorStatus(), socks: .default, route: "direct", phases: [])
        record.socks = "127.0.0.1:\(port)"
        record.isReady = true
        try record.write(to: file)
        return file
    }

    /// A stale status file: its pid now belongs to another account's process, which listens on
    /// the port; or the pid is one of ours (here: this test process) and the port another
    /// account's. Neither is attached, and the app layer starts no tor of its own beside it.
    @Test func anotherAccountsListenerIsNeverAttached() async throws {
        let account = try OtherLocalAccount.ensure()
        let stranger = try PeerProcess(script: "echo_peer.py", arguments: ["127.0.0.1", "0"], account: account)
        defer { stranger.stop() }
        let port = try await stranger.port()

        for pid in [stranger.processIdentifier, getpid()] {
            let file = try Self.statusFile(pid: pid, port: port)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let error = #expect(throws: SessionError.self, "pid \(pid)") { try RunningSession.find(statusFile: file) }
            #expect(error?.code == .unprovenSession)
            #expect(error?.message.contains("not a session of ours") == true, "\(String(describing: error))")

            let state = file.deletingLastPathComponent()
            let settings = SessionSettings(store: .memory(InMemorySettings()), stateDirectory: state)
            #expect(throws: SessionError.self, "the app layer refuses, pid \(pid)") {
                let tor = try AppTor.attachOrPrepare(statusFile: file, settings: settings,
                                                     options: SessionOptions(dataDirectory: state.appendingPathComponent("tor")))
                Issue.record("the app layer chose \(tor.source)")
            }
        }
    }

    /// Our own listener, held by the process the file names (this one, as tor's SOCKS port is held
    /// by `postern run`), is attached and its status read.
    @Test func ourOwnListenerIsAttached() async throws {
        let listener = try HeldLoopbackPort()
        let file = try Self.statusFile(pid: getpid(), port: listener.port)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let running = try #require(try RunningSession.find(statusFile: file))
        #expect(running.socks.port == listener.port)
        #expect(await running.torIsReady())
    }
}
