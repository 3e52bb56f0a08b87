import Foundation
import Synchronization
import Testing
import PosternTestSupport
import TransportBase
import TransportTestSupport

/// External transports (pt-spec managed clients Postern starts itself): Debian's obfs4proxy as a
/// real plugin against obfs4proxy as the server, and small shell scripts as bad plugins. Every test
/// checks afterwards that no process it started is left (by PID and by the script's unique path).
@Suite(.serialized) struct ExternalTransportTests {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-plugin-tests-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func client(_ executable: String, names: [String] = ["obfs4"], arguments: [String] = [],
                timeout: Duration = .seconds(3)) -> ManagedPluginClient {
        ManagedPluginClient(.init(names: names.map { TransportName($0)! }, executable: executable, arguments: arguments,
                                  stateLocation: directory.appendingPathComponent("pt_state").path),
                            startTimeout: timeout, retryDelay: .zero)
    }

    /// A shell-script plugin in the test's directory (its path is unique, so pgrep -f finds only ours).
    func script(_ name: String, _ body: String, executable: Bool = true) throws -> String {
        let path = directory.appendingPathComponent(name).path
        try ("#!/bin/sh\n" + body + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, executable ? 0o755 : 0o644)
        return path
    }

    /// `sleep 300.<random>`: GNU sleep takes fractions, so the command line is unique to this test
    /// and pgrep can tell whether this very process (a plugin's own child) is still around.
    static func uniqueSleep() -> String { "sleep 300.\(UInt32.random(in: 100_000...999_999))" }

    static func processesMatching(_ pattern: String) -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/pgrep")
        process.arguments = ["-f", pattern]
        let pipe = Pipe()
        process.standardOutput = pipe
        try? process.run()
        process.waitUntilExit()
        return String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .split(separator: "\n").map(String.init)
    }

    static func isAlive(_ pid: Int32) -> Bool { kill(pid, 0) == 0 }

    /// Starting `client` fails within `limit` with an error naming the plugin and matching `code`.
    func expectStartFails(_ client: ManagedPluginClient, code: TransportError.Code, mentioning: String,
                          limit: Duration = .seconds(10)) async throws {
        let started = ContinuousClock.now
        do {
            _ = try await client.endpoint(for: TransportName("obfs4")!)
            Issue.record("the start of \(client.definition.executable) succeeded")
        } catch let error as TransportError {
            #expect(error.code == code, "\(error)")
            #expect(error.message.contains(client.definition.label), "\(error.message)")
            #expect(error.message.contains(mentioning), "\(error.message)")
        }
        #expect(ContinuousClock.now - started < limit)
        #expect(client.processID == nil)
        await client.stop()
    }

    func expectNoProcess(matching path: String) async throws {
        // The reaper kills the group as soon as the plugin has ended; give it a moment.
        var left = Self.processesMatching(path)
        var attempts = 0
        while !left.isEmpty && attempts < 50 {
            try await Task.sleep(for: .milliseconds(20))
            left = Self.processesMatching(path)
            attempts += 1
        }
        #expect(left.isEmpty, "left running: \(left)")
    }

    @Test func obfs4proxyAsPluginCarriesBytesToAnObfs4proxyServer() async throws {
        let echo = try LoopbackPeer(.echo)
        defer { echo.stop() }
        let server = try await Obfs4ProxyServer(orPort: echo.port, iatMode: 0)
        defer { server.stop() }
        let plugin = client("/usr/bin/obfs4proxy", timeout: .seconds(20))
        let transport = ExternalTransport(name: TransportName("obfs4")!, client: plugin, dialTimeout: .seconds(20))
        let dial = try transport.prepareDial(arguments: server.arguments)
        let connection = try await dial.dial(server.endpoint, context: DialContext())
        let pid = try #require(plugin.processID)
        let payload = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try await connection.write(payload)
        var received: [UInt8] = []
        while received.count < payload.count {
            let chunk = try await connection.read(maximumCount: 65536)
            if chunk.isEmpty { break }
            received += chunk
        }
        #expect(received == payload)
        connection.close()
        // A second dial reuses the running plugin.
        let again = try await dial.dial(server.endpoint, context: DialContext())
        #expect(plugin.processID == pid)
        again.close()
        await plugin.stop()
        #expect(!Self.isAlive(pid))
    }

    @Test func aMissingPluginIsNamed() async throws {
        let path = directory.appendingPathComponent("no-such-plugin").path
        try await expectStartFails(client(path), code: .pluginNotFound, mentioning: "No such file")
    }

    @Test func aPluginThatIsNotExecutableIsNamed() async throws {
        let path = try script("not-executable.sh", "echo VERSION 1", executable: false)
        try await expectStartFails(client(path), code: .pluginNotFound, mentioning: "not an executable")
    }

    @Test func aPluginPrintingGarbageIsStopped() async throws {
        let sleeper = Self.uniqueSleep()
        let path = try script("garbage.sh", "echo '{\"hello\": \"world\"}'\nexec \(sleeper)")
        try await expectStartFails(client(path), code: .pluginProtocol, mentioning: "not a pt-spec line")
        try await expectNoProcess(matching: sleeper)
        let binary = try script("binary.sh", "printf 'VERSION 1\\n\\377\\001\\n'\nexec \(sleeper)")
        try await expectStartFails(client(binary), code: .pluginProtocol, mentioning: "binary")
        try await expectNoProcess(matching: sleeper)
    }

    @Test func aPluginThatExitsAtOnceIsNamed() async throws {
        let path = try script("exits.sh", "exit 3")
        try await expectStartFails(client(path), code: .pluginExited, mentioning: "exit status 3")
        try await expectNoProcess(matching: path)
    }

    @Test func aPluginThatNeverSaysCMethodsDoneMeetsTheDeadline() async throws {
        // It also starts a child of its own, which must not outlive it.
        let sleeper = Self.uniqueSleep()
        let path = try script("no-done.sh", "echo VERSION 1\necho 'CMETHOD obfs4 socks5 127.0.0.1:1'\n\(sleeper) &\nwait")
        try await expectStartFails(client(path, timeout: .seconds(1)), code: .pluginTimedOut, mentioning: "no CMETHODS DONE",
                                   limit: .seconds(8))
        try await expectNoProcess(matching: path)
        try await expectNoProcess(matching: sleeper)
    }

    @Test func aPluginThatHangsSilentlyMeetsTheDeadline() async throws {
        let sleeper = Self.uniqueSleep()
        let path = try script("hangs.sh", "exec \(sleeper)")
        try await expectStartFails(client(path, timeout: .seconds(1)), code: .pluginTimedOut, mentioning: "within", limit: .seconds(8))
        try await expectNoProcess(matching: sleeper)
    }

    @Test func versionEnvAndMethodErrorsAreReported() async throws {
        let version = try script("version-error.sh", "echo VERSION-ERROR no-version")
        try await expectStartFails(client(version), code: .pluginProtocol, mentioning: "VERSION-ERROR no-version")
        let environment = try script("env-error.sh", "echo 'ENV-ERROR no TOR_PT_STATE_LOCATION environment variable'")
        try await expectStartFails(client(environment), code: .pluginProtocol, mentioning: "ENV-ERROR")
        let sleeper = Self.uniqueSleep()
        let method = try script("method-error.sh", "echo VERSION 1\necho 'CMETHOD-ERROR obfs4 no such transport'\necho CMETHODS DONE\nexec \(sleeper)")
        try await expectStartFails(client(method), code: .pluginMethodMissing, mentioning: "no such transport")
        try await expectNoProcess(matching: sleeper)
    }

    /// An executable still open for writing somewhere (just written, and another thread forked while
    /// the descriptor was open) makes exec fail with ETXTBSY for a moment; the start waits it out
    /// (up to 2 s). Seen as a one-off "Text file busy" when this suite ran beside others. Here the
    /// test holds the script open for writing and lets go 50 ms later, from a thread of its own so
    /// that a busy cooperative pool cannot delay the release past the start's patience.
    @Test func anExecutableBusyForAMomentStillStarts() async throws {
        let sleeper = Self.uniqueSleep()
        let path = try script("busy.sh", "echo VERSION 1\necho 'CMETHOD obfs4 socks5 127.0.0.1:9'\necho CMETHODS DONE\nexec \(sleeper)")
        let writer = open(path, O_WRONLY | O_CLOEXEC)
        try #require(writer >= 0)
        let release = Thread {
            usleep(50_000)
            close(writer)
        }
        release.start()
        let plugin = client(path)
        let endpoint = try await plugin.endpoint(for: TransportName("obfs4")!)
        #expect(endpoint.port == 9, "\(endpoint)")
        await plugin.stop()
        try await expectNoProcess(matching: sleeper)
    }

    /// The state directory is made before the plugin runs, and a failure to make it stops the
    /// start (the plugin would otherwise keep its state wherever it could).
    @Test func aStateDirectoryThatCannotBeMadeStopsTheStart() async throws {
        let sleeper = Self.uniqueSleep()
        let path = try script("state-plugin.sh", "echo VERSION 1\necho 'CMETHOD obfs4 socks5 127.0.0.1:1'\necho CMETHODS DONE\nexec \(sleeper)")
        let notADirectory = directory.appendingPathComponent("a-file")
        try Data("x".utf8).write(to: notADirectory)
        let plugin = ManagedPluginClient(.init(names: [TransportName("obfs4")!], executable: path, arguments: [],
                                               stateLocation: notADirectory.appendingPathComponent("pt_state").path),
                                         startTimeout: .seconds(3), retryDelay: .zero)
        try await expectStartFails(plugin, code: .pluginFailed, mentioning: "has no private state directory")
        try await expectNoProcess(matching: sleeper)
    }

    /// An existing state directory that others may enter is made 0700; another user's is refused.
    @Test func anExistingStateDirectoryIsMadePrivateOrRefused() async throws {
        let sleeper = Self.uniqueSleep()
        let path = try script("state-plugin2.sh", "echo VERSION 1\necho 'CMETHOD obfs4 socks5 127.0.0.1:1'\necho CMETHODS DONE\nexec \(sleeper)")
        let state = directory.appendingPathComponent("open-state")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o777])
        chmod(state.path, 0o777)
        let plugin = ManagedPluginClient(.init(names: [TransportName("obfs4")!], executable: path, arguments: [],
                                               stateLocation: state.path), startTimeout: .seconds(3), retryDelay: .zero)
        _ = try await plugin.endpoint(for: TransportName("obfs4")!)
        await plugin.stop()
        var info = stat()
        #expect(stat(state.path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700, "mode \(String(info.st_mode & 0o777, radix: 8))")
        try await expectNoProcess(matching: sleeper)

        guard geteuid() == 0 else { return }  // only root can give a directory to another user
        #expect(chown(state.path, 65534, 65534) == 0)
        let refused = ManagedPluginClient(.init(names: [TransportName("obfs4")!], executable: path, arguments: [],
                                                stateLocation: state.path), startTimeout: .seconds(3), retryDelay: .zero)
        try await expectStartFails(refused, code: .pluginFailed, mentioning: "belongs to another user")
        try await expectNoProcess(matching: sleeper)
    }

    @Test func thePluginGetsThePTEnvironmentAndNoProxyVariables() async throws {
        let dump = directory.appendingPathComponent("environment.txt").path
        // Reports its environment, then configures one listener that is never used.
        let path = try script("env-dump.sh", "env > '\(dump)'\necho VERSION 1\necho 'CMETHOD obfs4 socks5 127.0.0.1:1'\necho CMETHODS DONE\nexec cat")
        setenv("ALL_PROXY", "socks5://192.0.2.1:1080", 1)
        defer { unsetenv("ALL_PROXY") }
        let plugin = client(path)
        let endpoint = try await plugin.endpoint(for: TransportName("obfs4")!)
        #expect(endpoint.description == "127.0.0.1:1")
        let environment = try String(contentsOfFile: dump, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(environment.contains("TOR_PT_MANAGED_TRANSPORT_VER=1"))
        #expect(environment.contains("TOR_PT_CLIENT_TRANSPORTS=obfs4"))
        #expect(environment.contains("TOR_PT_EXIT_ON_STDIN_CLOSE=1"))
        #expect(environment.contains { $0.hasPrefix("TOR_PT_STATE_LOCATION=/") && $0.hasSuffix("/") })
        #expect(!environment.contains { $0.hasPrefix("ALL_PROXY") || $0.hasPrefix("TOR_PT_PROXY") })
        let pid = try #require(plugin.processID)
        // `exec cat` ends when its stdin closes: pt-spec's stdin-close shutdown.
        await plugin.stop(grace: .seconds(5))
        #expect(!Self.isAlive(pid))
    }

    @Test func argumentsTravelAsTorEncodesThem() throws {
        let short = try #require(try ExternalTransport.socksCredentials(for: TransportArguments(["cert": "a;b\\c", "iat-mode": "0"])))
        #expect(short.username == "cert=a\\;b\\\\c;iat-mode=0")
        #expect(short.password == "\u{0}")
        let long = try #require(try ExternalTransport.socksCredentials(for: TransportArguments(["k": String(repeating: "x", count: 300)])))
        #expect(long.username.utf8.count == 255)
        #expect(long.username + long.password == "k=" + String(repeating: "x", count: 300))
        #expect(try ExternalTransport.socksCredentials(for: TransportArguments()) == nil)
        #expect(throws: TransportError.self) { try ExternalTransport.socksCredentials(for: TransportArguments(["k": String(repeating: "x", count: 600)])) }
        #expect(throws: TransportError.self) { try ExternalTransport.socksCredentials(for: TransportArguments(["k": "é"])) }
    }

    @Test func handshakeParserFollowsTorsOrderingRules() {
        var parser = ManagedClientHandshake(requested: [TransportName("obfs4")!, TransportName("meek_lite")!], proxyRequested: false)
        #expect(parser.consume(Array("LOG SEVERITY=notice MESSAGE=\"hi\"".utf8)) == .needMore)
        #expect(parser.consume(Array("VERSION 1".utf8)) == .needMore)
        #expect(parser.consume(Array("CMETHOD obfs4 socks5 127.0.0.1:4000".utf8)) == .needMore)
        #expect(parser.consume(Array("CMETHOD meek_lite socks5 192.0.2.1:4000".utf8)) == .needMore)
        guard case .configured(let methods, let errors) = parser.consume(Array("CMETHODS DONE".utf8)) else {
            Issue.record("not configured")
            return
        }
        #expect(methods[TransportName("obfs4")!]?.description == "127.0.0.1:4000")
        #expect(errors[TransportName("meek_lite")!] == "its listener is not a loopback IP:port")

        var early = ManagedClientHandshake(requested: [TransportName("obfs4")!], proxyRequested: false)
        guard case .failed = early.consume(Array("CMETHODS DONE".utf8)) else { Issue.record("CMETHODS DONE before VERSION accepted"); return }
        var proxied = ManagedClientHandshake(requested: [TransportName("obfs4")!], proxyRequested: true)
        _ = proxied.consume(Array("VERSION 1".utf8))
        _ = proxied.consume(Array("CMETHOD obfs4 socks5 127.0.0.1:4000".utf8))
        guard case .proxyNotAccepted(let reason) = proxied.consume(Array("CMETHODS DONE".utf8)) else { Issue.record("missing PROXY DONE accepted"); return }
        #expect(reason.contains("PROXY DONE"))
        var wrongVersion = ManagedClientHandshake(requested: [TransportName("obfs4")!], proxyRequested: false)
        guard case .failed = wrongVersion.consume(Array("VERSION 2".utf8)) else { Issue.record("VERSION 2 accepted"); return }
    }

    /// Issue #24, item 9: obfs4proxy's pt-spec listener is open to every local account, and before
    /// the egress gate another account could ask it for an obfs4 connection to any address. Now the
    /// plugin's own connections go through Postern's gate, which lets it reach only the bridges
    /// Postern dialled: Postern's dial still works, the stranger's is refused, and the address it
    /// asked for sees no connection.
    @Test(.enabled(if: OtherLocalAccount.isAvailable, "needs root to create a second local account"))
    func anotherAccountCannotUseThePluginsListenerToReachOtherAddresses() async throws {
        let account = try OtherLocalAccount.ensure()
        let echo = try LoopbackPeer(.echo)
        defer { echo.stop() }
        let server = try await Obfs4ProxyServer(orPort: echo.port, iatMode: 0)
        defer { server.stop() }
        let plugin = client("/usr/bin/obfs4proxy", timeout: .seconds(20))
        #expect(plugin.narrowsEgress)
        let transport = ExternalTransport(name: TransportName("obfs4")!, client: plugin, dialTimeout: .seconds(20))
        let connection = try await transport.prepareDial(arguments: server.arguments).dial(server.endpoint, context: DialContext())
        try await connection.write(Array("ours".utf8))
        #expect(try await connection.read(maximumCount: 16) == Array("ours".utf8))
        connection.close()
        #expect(plugin.egressNotice == nil, "obfs4proxy accepts TOR_PT_PROXY")

        // Somewhere nobody permitted: a listener of the test's that notes every connection.
        let elsewhere = try LoopbackListener()
        let reached = Mutex(false)
        let watcher = Task {
            while let accepted = try? await elsewhere.accept() {
                reached.withLock { $0 = true }
                accepted.close()
            }
        }
        defer { elsewhere.close(); watcher.cancel() }
        let listener = try await plugin.endpoint(for: TransportName("obfs4")!)
        let credentials = try #require(try ExternalTransport.socksCredentials(for: server.arguments))
        let stranger = try PeerProcess(script: "socks_connect_probe.py",
                                       arguments: ["127.0.0.1", "\(listener.port)", credentials.username, "-", "127.0.0.1", "\(elsewhere.port)"],
                                       account: account)
        defer { stranger.stop() }
        var result: String?
        let deadline = ContinuousClock.now + .seconds(60)
        while result == nil, !reached.withLock({ $0 }), ContinuousClock.now < deadline {
            result = try? await stranger.waitForLine(prefix: "RESULT ", timeout: 0.5)
        }
        // A connection the plugin might still be making gets a moment to arrive.
        try await Task.sleep(for: .milliseconds(300))
        #expect(!reached.withLock { $0 }, "another account reached an address nobody permitted through the plugin")
        #expect(result != nil && result != "reply=0", "the stranger's CONNECT: \(result ?? "no answer")")
        await plugin.stop()
    }

    /// A plugin that ignores `TOR_PT_PROXY` (no `PROXY DONE`) still runs, started again without the
    /// gate, and the notice says its listener stays open; the first start had the gate as its proxy.
    @Test func aPluginIgnoringTheEgressGateRunsWithoutItAndSaysSo() async throws {
        let dump = directory.appendingPathComponent("starts.txt").path
        let sleeper = Self.uniqueSleep()
        let path = try script("no-proxy.sh", "{ env | grep '^TOR_PT_PROXY=' || echo none; } >> '\(dump)'\necho VERSION 1\necho 'CMETHOD obfs4 socks5 127.0.0.1:1'\necho CMETHODS DONE\nexec \(sleeper)")
        let plugin = client(path)
        let transport = ExternalTransport(name: TransportName("obfs4")!, client: plugin, dialTimeout: .seconds(3))
        let notices = Mutex<[String]>([])
        let context = DialContext(events: TransportEventSink { event in
            if event.kind == .egressUnrestricted { notices.withLock { $0.append(event.message) } }
        })
        // Port 1 refuses; the dial fails, but only after the plugin has started.
        let bridge = try TransportEndpoint(parsing: "127.0.0.1:9")
        _ = try? await transport.prepareDial(arguments: TransportArguments()).dial(bridge, context: context)
        _ = try? await transport.prepareDial(arguments: TransportArguments()).dial(bridge, context: context)
        let starts = try String(contentsOfFile: dump, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(starts.count == 2, "\(starts)")
        #expect(starts.first?.hasPrefix("TOR_PT_PROXY=socks5://127.0.0.1:") == true, "\(starts)")
        #expect(starts.last == "none", "\(starts)")
        #expect(plugin.egressNotice?.contains("other local accounts") == true)
        #expect(notices.withLock { $0 }.count == 1, "the notice is given once per start: \(notices.withLock { $0 })")
        await plugin.stop()
        try await expectNoProcess(matching: sleeper)
    }

    /// Plugins whose transports connect elsewhere than the SOCKS target get no gate (it would refuse
    /// their broker or front) and keep pt-spec's listener.
    @Test func onlyBridgeAddressedTransportsAreNarrowed() {
        #expect(client("/bin/true", names: ["obfs4", "obfs3"]).narrowsEgress)
        #expect(!client("/bin/true", names: ["obfs4", "meek_lite"]).narrowsEgress)
        #expect(!client("/bin/true", names: ["snowflake"]).narrowsEgress)
        #expect(!client("/bin/true", names: ["webtunnel"]).narrowsEgress)
    }
}
