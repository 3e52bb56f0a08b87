import Foundation
import Synchronization
import Testing
import PosternTestSupport
@testable import TransportBase
import TransportTestSupport

/// Another local account against an in-process PT listener (issue #24, item 8): it must not hold
/// the sessions tor needs, and its refusals must not flood the warnings (stderr and the events
/// file of `postern run`). The stranger is a real second local account on loopback.
@Suite(.enabled(if: OtherLocalAccount.isAvailable, "needs root to create a second local account"))
struct PTListenerClientTests {
    @Test func anotherAccountHoldsNoSessionAndIsWarnedAboutOnce() async throws {
        let account = try OtherLocalAccount.ensure()
        let echo = try LoopbackPeer(.echo)
        defer { echo.stop() }
        let target = try TransportEndpoint(parsing: "127.0.0.1:\(echo.port)")
        let warnings = Mutex<[String]>([])
        let events = TransportEventSink { event in
            if event.kind == .clientRejected, event.severity == .warning { warnings.withLock { $0.append(event.message) } }
        }
        let bridge = SocksAdmission.Bridge(endpoint: target, arguments: TransportArguments(["cert": "c1"]))
        let server = try PTSocksServer(transport: CountingPlainTransport(), events: events, negotiationTimeout: .seconds(60),
                                       admission: .restricted(to: [bridge], maximumSessions: 4))
        defer { server.stop() }

        // Three times the cap, each connection greeting and then silent.
        let stranger = try PeerProcess(script: "socks_slot_holder.py", arguments: ["127.0.0.1", "\(server.port)", "12"], account: account)
        defer { stranger.stop() }
        let result = try await stranger.waitForLine(prefix: "RESULT ", timeout: 60)
        #expect(result == "held=0 refused=12", "the other account got sessions")
        #expect(server.admission.openSessions == 0)
        // The stranger's refusals were warned about once (the rest are counted in the next warning).
        let seen = warnings.withLock { $0 }
        #expect(seen.count == 1, "twelve refusals, one warning a minute: \(seen)")
        #expect(seen.first?.contains("not this process's") == true, "\(seen)")

        // tor's connection (this process's) is served while the stranger's are still open.
        var ours = try await RawSocksClient.connect(to: server.endpoint)
        #expect(try await ours.open(arguments: "cert=c1", target: target).reply == 0, "this process's connection was refused")
        try await ours.socket.write(Array("hello".utf8))
        #expect(try await ours.read(5) == Array("hello".utf8))
    }

    @Test func quietRefusalsAreCountedInTheNextWarning() {
        let limiter = RefusalWarningLimiter(interval: .seconds(60))
        let start = ContinuousClock.now
        #expect(limiter.refusal(at: start) == 0, "the first refusal is a warning at once")
        for second in 1...5 { #expect(limiter.refusal(at: start + .seconds(second)) == nil) }
        #expect(limiter.refusal(at: start + .seconds(61)) == 5, "the next warning counts the quiet ones")
        #expect(limiter.refusal(at: start + .seconds(62)) == nil)
        #expect(RefusalWarningLimiter.text("refused", quietBefore: 5) == "refused (5 more refused since the last warning)")
    }

    /// A stranger connecting now and then must not hide tor's own refusals (issue #24, item 5):
    /// each has its own warning limit, so a failed negotiation of this process's connection is
    /// warned about although a stranger was refused a moment before.
    @Test func aStrangersRefusalDoesNotHideTorsOwn() async throws {
        let account = try OtherLocalAccount.ensure()
        let warnings = Mutex<[String]>([])
        let events = TransportEventSink { event in
            if event.kind == .clientRejected, event.severity == .warning { warnings.withLock { $0.append(event.message) } }
        }
        let server = try PTSocksServer(transport: CountingPlainTransport(), events: events, admission: .restricted(to: []))
        defer { server.stop() }
        let stranger = try PeerProcess(script: "socks_slot_holder.py", arguments: ["127.0.0.1", "\(server.port)", "1"], account: account)
        defer { stranger.stop() }
        #expect(try await stranger.waitForLine(prefix: "RESULT ", timeout: 60) == "held=0 refused=1")

        // This process's client speaks SOCKS 4: its negotiation fails, and the listener closes it.
        let ours = try await RawSocksClient.connect(to: server.endpoint)
        try await ours.socket.write([4, 1, 0, 80, 127, 0, 0, 1, 0])
        #expect(try await ours.socket.read(maximumCount: 16).isEmpty, "the listener answered a SOCKS 4 request")
        // Both were warned about before their closes, which both clients have seen.
        let seen = warnings.withLock { $0 }
        #expect(seen.count == 2, "\(seen)")
        #expect(seen.first?.contains("not this process's") == true, "\(seen)")
        #expect(seen.last?.contains("SOCKS version 4") == true, "tor's refusal was not warned about: \(seen)")
    }

    /// Where this process cannot recognise its own connections (no netlink sock_diag: gVisor, a
    /// seccomp filter; or no /proc/self/fd), a listener restricted to them does not start, and
    /// says why (issue #24, item 2), rather than refusing each of tor's connections with a warning
    /// that does not name the cause.
    @Test func aListenerThatCannotRecogniseItsClientsDoesNotStart() throws {
        let blind = SocksAdmission(allowed: [], maximumSessions: 4, clients: .thisProcess) { _ in
            .unknowable("netlink sock_diag cannot be opened (Protocol not supported)")
        }
        let error = #expect(throws: TransportError.self) { _ = try PTSocksServer(transport: CountingPlainTransport(), admission: blind) }
        #expect(error?.code == .clientCheckUnavailable)
        #expect(error?.message.contains("Protocol not supported") == true && error?.message.contains("other local accounts") == true,
                "\(String(describing: error))")
        // The real check works on this machine, and an open listener needs none.
        _ = try PTSocksServer(transport: CountingPlainTransport(), admission: .restricted(to: []))
        _ = try PTSocksServer(transport: CountingPlainTransport(), admission: SocksAdmission(allowed: nil, maximumSessions: 4, clients: .anyLocalUser) { _ in
            .unknowable("unused")
        })
    }

    /// An external plugin's egress gate (issue #24, item 9) takes only the plugin's connections:
    /// none before the plugin is known, this process's once it is named, and not another process's.
    @Test func aChildProcessListenerTakesOnlyThatProcess() async throws {
        let echo = try LoopbackPeer(.echo)
        defer { echo.stop() }
        let target = try TransportEndpoint(parsing: "127.0.0.1:\(echo.port)")
        let child = SocksAdmission.ChildProcessReference()
        let server = try PTSocksServer(transport: CountingPlainTransport(),
                                       admission: .restricted(to: [SocksAdmission.Bridge(endpoint: target, arguments: TransportArguments(["cert": "c1"]))],
                                                              clients: .childProcess(child)))
        defer { server.stop() }
        func served() async throws -> Bool {
            var client = try await RawSocksClient.connect(to: server.endpoint)
            guard let reply = try? await client.open(arguments: "cert=c1", target: target) else { return false }
            return reply.reply == 0
        }
        #expect(try await served() == false, "taken before the child was named")
        let sleeper = Process()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["30"]
        try sleeper.run()
        defer { sleeper.terminate() }
        child.adopt(sleeper.processIdentifier)
        #expect(try await served() == false, "another process's connection was taken")
        child.adopt(getpid())
        #expect(try await served() == true, "the named process's connection was refused")
    }
}
