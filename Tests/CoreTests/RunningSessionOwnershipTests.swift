import Foundation
import Testing
import PosternAppLayer
import PosternTor
import PosternTestSupport
import PosternSystem
@testable import PosternRuntime

/// Attaching to a `postern run` proves from the kernel that the status file's process holds the
/// SOCKS listener it names, under our uid (issue #24, item 7). The stranger is a real second local
/// account listening on loopback, as after a SIGKILLed run whose port and pid were taken.
@Suite(.enabled(if: OtherLocalAccount.isAvailable, "needs root to create a second local account"))
struct RunningSessionOwnershipTests {
    private static func statusFile(pid: Int32, port: UInt16, host: String = "127.0.0.1", in directory: URL? = nil) throws -> URL {
        let directory = directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("postern-ownership-\(UUID().uuidString.prefix(8))")
        let file = directory.appendingPathComponent("run-status.json")
        var record = RunStatusRecord(pid: pid, status: TorStatus(), socks: .default, route: "direct", phases: [])
        record.socks = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
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

    /// Another account listening on a wildcard address (0.0.0.0, or [::]) takes the connections to
    /// the loopback endpoint the file names: it is never attached (issue #24, item 6).
    @Test(arguments: [("0.0.0.0", "127.0.0.1"), ("::", "::1")])
    func anotherAccountsWildcardListenerIsNeverAttached(_ bound: String, _ named: String) async throws {
        let account = try OtherLocalAccount.ensure()
        let stranger = try PeerProcess(script: "echo_peer.py", arguments: [bound, "0"], account: account)
        defer { stranger.stop() }
        let port = try await stranger.port()
        let file = try Self.statusFile(pid: getpid(), port: port, host: named)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let error = #expect(throws: SessionError.self, "\(bound) attached as \(named)") { try RunningSession.find(statusFile: file) }
        #expect(error?.code == .unprovenSession)
        #expect(error?.message.contains("listens there") == true, "\(String(describing: error))")
    }

    /// A user without privilege may not signal another account's process: kill(pid, 0) fails with
    /// EPERM, which is a live process that is not ours, not a dead one (issue #24, item 4). The
    /// status file of `postern status`, run as the other account, names this (root's) process.
    @Test func aProcessWeMayNotSignalIsRefusedNotTakenForDead() async throws {
        let account = try OtherLocalAccount.ensure()
        let listener = try HeldLoopbackPort()
        let configuration = FileManager.default.temporaryDirectory.appendingPathComponent("postern-eperm-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: configuration) }
        let state = configuration.appendingPathComponent("state")
        let file = try Self.statusFile(pid: getpid(), port: listener.port, in: state)
        for path in [configuration.path, state.path, file.path] {
            #expect(chown(path, account.uid, account.gid) == 0 && chmod(path, path == file.path ? 0o600 : 0o700) == 0)
        }
        let result = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/setpriv"),
                                                 account.commandLine([ProcessRunner.postern.path, "status"]),
                                                 environment: ["POSTERN_CONFIG_DIR": configuration.path, "HOME": configuration.path,
                                                               "PATH": "/usr/bin:/bin"])
        #expect(result.status == 1)
        #expect(!result.stdout.contains("not running"), "a live process of another account was taken for a dead one: \(result.stdout)")
        #expect(result.stderr.contains("not a session of ours") && result.stderr.contains("belongs to another account"), "\(result.stderr)")
    }

    /// The listener was proven ours, then another account took the port before the app connected
    /// (issue #24, item 3): the connection is checked before libcurl sends its SOCKS greeting, so
    /// the stranger receives nothing, not even the greeting, let alone a destination's name.
    @Test func aConnectionAcceptedByAnotherAccountCarriesNothing() async throws {
        let account = try OtherLocalAccount.ensure()
        let stranger = try PeerProcess(script: "echo_peer.py", arguments: ["127.0.0.1", "0"], account: account)
        defer { stranger.stop() }
        let port = try await stranger.port()
        let client = ProxiedHTTPClient(activation: NetworkActivationService(store: nil, readiness: TorManager()))
        let route = NetworkRoute.tor(try SocksEndpoint(host: "127.0.0.1", port: port))
        let error = await #expect(throws: AppLayerError.self) {
            _ = try await client.get(URL(string: "http://relays.example/list.csv")!, route: route, timeout: .seconds(10))
        }
        #expect(error?.code == .socksNotOurs, "\(String(describing: error))")
        #expect(error?.message.contains("relays.example") == false)
        // The stranger saw the connection and its close, with no byte in it.
        #expect(try await stranger.waitForLine(prefix: "CLOSED ", timeout: 30) == "0", "\(stranger.output)")
    }
}
