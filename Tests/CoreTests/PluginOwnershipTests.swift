import BridgeConfig
import Foundation
import PosternLinkSpec
import Testing
import TransportBase
@testable import PosternRuntime

/// A plugin process belongs to the registry (and so the session) it was made for: stopping one
/// registry's plugins leaves another's running. Before, every stop stopped every plugin the
/// process had started, a second session's too.
@Suite struct PluginOwnershipTests {
    private static func isAlive(_ pid: Int32) -> Bool { kill(pid, 0) == 0 }

    @Test func stoppingOneRegistrysPluginsLeavesAnothersRunning() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-plugin-owner-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // A managed client that speaks just enough of pt-spec, then waits to be stopped.
        let script = directory.appendingPathComponent("plugin.sh")
        try Data("#!/bin/sh\necho VERSION 1\necho 'CMETHOD ownerpt socks5 127.0.0.1:9'\necho CMETHODS DONE\nexec sleep 300\n".utf8)
            .write(to: script)
        chmod(script.path, 0o700)
        let name = try #require(TransportName("ownerpt"))
        let plugin = try TransportPlugin(names: [name], executable: script.path, arguments: [])
        let first = try Transports.registry(plugins: [plugin], stateLocation: directory)
        let second = try Transports.registry(plugins: [plugin], stateLocation: directory)
        let firstClient = try #require(first.transport(named: name) as? ExternalTransport).client
        let secondClient = try #require(second.transport(named: name) as? ExternalTransport).client
        _ = try await firstClient.endpoint(for: name)
        _ = try await secondClient.endpoint(for: name)
        let firstPID = try #require(firstClient.processID)
        let secondPID = try #require(secondClient.processID)
        #expect(firstPID != secondPID)

        await first.stopPlugins()
        #expect(!Self.isAlive(firstPID), "the first registry's plugin is stopped")
        #expect(Self.isAlive(secondPID), "the second registry's plugin runs on")
        await second.stopPlugins()
        #expect(!Self.isAlive(secondPID))
    }
}
