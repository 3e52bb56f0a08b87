import BridgeConfig
import Foundation
import Testing
import TransportBase
@testable import PosternCore
@testable import PosternRuntime

/// Where Postern's library puts files: plugin state in the user's own state directory, settings
/// directories that are the user's and private, temporary files that never follow a link.
@Suite final class PrivateFilesTests {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-private-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    private func mode(_ url: URL) -> mode_t {
        var info = stat()
        return stat(url.path, &info) == 0 ? info.st_mode & 0o7777 : 0
    }

    /// A registry built without a state location puts plugin state under the user's Postern state
    /// directory, not in a shared temporary directory another account could prepare first.
    @Test func defaultPluginStateIsInTheUsersStateDirectory() throws {
        let name = try #require(TransportName("fakepluginx"))
        let plugin = try TransportPlugin(names: [name], executable: "/bin/true", arguments: [])
        let registry = try Transports.registry(plugins: [plugin])
        let transport = try #require(registry.transport(named: name) as? ExternalTransport)
        let state = transport.client.definition.stateLocation
        let expected = PosternPaths(configDirectoryOverride: nil).stateDirectory.appendingPathComponent("pt_state").path + "/"
        #expect(state == expected)
        #expect(!state.hasPrefix(NSTemporaryDirectory()), "\(state)")
    }

    /// A file planted where the settings writer puts its temporary file (a link to a file of the
    /// user's) is not written through.
    @Test func assistWriterDoesNotFollowAPlantedLink() throws {
        let victim = directory.appendingPathComponent("victim")
        try Data("precious\n".utf8).write(to: victim)
        let planted = directory.appendingPathComponent(".\(AssistFiles.settingsFileName).\(getpid()).tmp")
        try FileManager.default.createSymbolicLink(at: planted, withDestinationURL: victim)
        try AssistFiles.writeLimits(RouteLimitTable(), in: directory)
        #expect(try String(contentsOf: victim, encoding: .utf8) == "precious\n")
        #expect(mode(directory.appendingPathComponent(AssistFiles.settingsFileName)) == 0o600)
    }

    /// An existing settings directory of ours that others may enter is made 0700.
    @Test func openSettingsDirectoryIsMadePrivate() throws {
        chmod(directory.path, 0o777)
        try AssistFiles.updateLimits(in: directory) { _ in }
        #expect(mode(directory) == 0o700)
    }

    /// Another user's settings directory is refused, naming it; nothing is written into it.
    @Test(.enabled(if: geteuid() == 0, "only root can give a directory to another user"))
    func anotherUsersSettingsDirectoryIsRefused() throws {
        #expect(chown(directory.path, 65534, 65534) == 0)
        #expect {
            try AssistFiles.updateLimits(in: directory) { _ in }
        } throws: { error in
            guard let error = error as? TorCoreError else { return false }
            return error.code == .filesystem && error.message.contains(directory.path) && error.message.contains("belongs to another user")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }
}
