import BridgeConfig
import Foundation
import PosternLinkSpec
import Testing
import PosternTor
import PosternTestSupport
import TransportBase
@testable import PosternRuntime

/// PosternRuntime without a tor: in-memory settings, typed refusals, finding a running session.
struct SessionSettingsTests {
    private static func temporaryDirectory() -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("postern-session-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func inMemoryUpdateAppliesAtOnceOrNotAtAll() throws {
        let settings = InMemorySettings()
        let line = try BridgeLine.parse("192.0.2.7:443 AAC11E571AF694D47D43385A9E475A57F5CE0A72", rules: Transports.argumentRules).line
        try settings.update { _ = try $0.add(line) }
        #expect(settings.configuration.bridges.count == 1)
        let generation = settings.generation
        #expect(throws: BridgeConfigError.self) {
            try settings.update { configuration throws(BridgeConfigError) in
                configuration.transport = .direct
                _ = try configuration.remove(BridgeID("abcdef")!)  // no such bridge: refused
            }
        }
        #expect(settings.configuration.transport == .auto, "the failed change left nothing behind")
        #expect(settings.generation == generation)
    }

    /// The Tor preference off: `start` refuses with a typed error, starts no tor (no data
    /// directory) and ends the event stream.
    @Test func torTurnedOffIsATypedRefusal() async throws {
        let state = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: state) }
        let settings = InMemorySettings()
        settings.update { $0.torEnabled = false }
        var options = SessionOptions(dataDirectory: state.appendingPathComponent("tor"))
        options.socks = try SocksEndpoint(port: 39153)
        let session = try PosternSession(settings: .inMemory(settings, stateDirectory: state), transports: TransportRegistry(),
                                         options: options)
        let events = session.events()
        do {
            try await session.start()
            Issue.record("started with Tor turned off")
        } catch {
            #expect(error.code == .torTurnedOff && error.kind == .usage, "\(error)")
        }
        for await _ in events {}
        #expect(!FileManager.default.fileExists(atPath: state.appendingPathComponent("tor").path))
        await session.stop()
    }

    /// A status file is trusted only with a live pid, a loopback SOCKS endpoint, and that pid
    /// holding the listener there (RunningSessionOwnershipTests has the refusals).
    @Test func runningSessionNeedsALivePidAndALoopbackEndpoint() throws {
        let state = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: state) }
        let file = state.appendingPathComponent("run-status.json")
        #expect(try RunningSession.find(statusFile: file) == nil, "no file")
        func write(pid: Int32, socks: String) throws {
            var record = RunStatusRecord(pid: pid, status: TorStatus(), socks: .default, route: "direct", phases: [])
            record.socks = socks
            try record.write(to: file)
        }
        let listener = try HeldLoopbackPort()
        try write(pid: getpid(), socks: "127.0.0.1:\(listener.port)")
        #expect(try RunningSession.find(statusFile: file)?.socks.port == listener.port)
        try write(pid: getpid(), socks: "10.0.0.1:9050")
        #expect(try RunningSession.find(statusFile: file) == nil, "a non-loopback endpoint")
        try write(pid: Int32.max, socks: "127.0.0.1:\(listener.port)")
        #expect(try RunningSession.find(statusFile: file) == nil, "a dead pid")
    }

    @Test func privateNetworksGetNoBuiltinsUnlessGiven() throws {
        var settings = SessionSettings.inMemory(InMemorySettings(), stateDirectory: URL(fileURLWithPath: "/nonexistent"))
        #expect(settings.builtins != nil)
        settings.chooseBuiltins(nil, torOptions: [try TorOption("SocksTimeout", "10")])
        #expect(settings.builtins != nil)
        settings.chooseBuiltins(nil, torOptions: [try TorOption("TestingTorNetwork", "1")])
        #expect(settings.builtins == nil)
        let line = try BridgeLine(validating: "obfs4 192.0.2.1:443 \(String(repeating: "A", count: 40)) cert=\(ConnectionAssistTests.cert) iat-mode=0",
                                  rules: Transports.argumentRules)
        settings.chooseBuiltins(BuiltinBridges(source: "test", lines: [line]), torOptions: [try TorOption("TestingTorNetwork", "1")])
        #expect(settings.builtins?.lines(for: .obfs4) == [line])
    }
}
