import BridgeConfig
import Foundation
import PosternLinkSpec
import Testing
import TransportBase
@testable import ConnectionAssist
@testable import PosternTor
@testable import PosternRuntime
@testable import PosternSystem

/// Where Postern's library puts files: plugin state in the user's own state directory, settings
/// directories that are the user's and private, temporary files that never follow a link.
@Suite final class PrivateFilesTests {
    let directory: URL

    init() throws {
        // Links resolved, as PrivateDirectory names the components it walked.
        directory = FileManager.default.temporaryDirectory.resolvingSymlinksInPath().appendingPathComponent("postern-private-\(UUID())")
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

    /// A link to a file of the user's, or a hard link to it, planted at the exact name the writer
    /// then uses for its temporary file, is not written through: the write fails naming it.
    @Test(arguments: [false, true])
    func assistWriterDoesNotFollowAPlantedLink(hardLink: Bool) throws {
        let victim = directory.appendingPathComponent("victim")
        try Data("precious\n".utf8).write(to: victim)
        let file = directory.appendingPathComponent(AssistFiles.settingsFileName)
        var planted: URL?
        let error = #expect(throws: TorCoreError.self) {
            try AssistFiles.writeAtomically(Data("{}\n".utf8), to: file) { file in
                let name = AssistFiles.randomTemporaryName(for: file)
                let link = self.directory.appendingPathComponent(name)
                if hardLink {
                    try? FileManager.default.linkItem(at: victim, to: link)
                } else {
                    try? FileManager.default.createSymbolicLink(at: link, withDestinationURL: victim)
                }
                planted = link
                return name
            }
        }
        let plantedPath = try #require(planted).path
        #expect(error?.code == .filesystem)
        #expect(error?.message.contains("cannot write \(plantedPath): File exists") == true, "\(String(describing: error))")
        #expect(try String(contentsOf: victim, encoding: .utf8) == "precious\n")
        #expect(!FileManager.default.fileExists(atPath: file.path))
    }

    /// Temporary files a killed writer left are removed by the next write of the same file once
    /// they are a minute old; younger ones (a write under way) and other files stay.
    @Test func staleTemporaryFilesOfAKilledWriterAreRemoved() throws {
        func leave(_ name: String, secondsAgo: Double) throws -> URL {
            let url = directory.appendingPathComponent(name)
            try Data("partial".utf8).write(to: url)
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -secondsAgo)], ofItemAtPath: url.path)
            return url
        }
        let staleSettings = try leave(".\(AssistFiles.settingsFileName).4242-17.tmp", secondsAgo: 300)
        let writeUnderWay = try leave(".\(AssistFiles.settingsFileName).4242-18.tmp", secondsAgo: 1)
        let staleRoute = try leave(".\(AssistFiles.lastRouteFileName).4242-19.tmp", secondsAgo: 300)
        let unrelated = try leave(".notes.4242-20.tmp", secondsAgo: 300)
        func exists(_ url: URL) -> Bool { FileManager.default.fileExists(atPath: url.path) }

        try AssistFiles.writeLimits(RouteLimitTable(), in: directory)
        #expect(!exists(staleSettings))
        #expect(exists(writeUnderWay))
        #expect(exists(staleRoute), "only the written file's own temporaries go")
        try AssistFiles.writeLastGoodRoute("direct", in: directory)
        #expect(!exists(staleRoute))
        #expect(exists(unrelated))
    }

    /// A settings directory that is a link (here to a directory of the user's that others may
    /// read) is refused, and the directory it leads to is neither closed nor written into.
    @Test func aLinkAsTheSettingsDirectoryIsRefusedAndWhereItLeadsIsLeftAlone() throws {
        let keys = directory.appendingPathComponent("keys")
        try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        chmod(keys.path, 0o755)
        let link = directory.appendingPathComponent("settings")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: keys)
        let error = #expect(throws: TorCoreError.self) { try AssistFiles.updateLimits(in: link) { _ in } }
        #expect(error?.code == .filesystem)
        #expect(error?.message.contains("\(link.path) is a symbolic link") == true, "\(String(describing: error))")
        #expect(mode(keys) == 0o755)
        #expect(try FileManager.default.contentsOfDirectory(atPath: keys.path).isEmpty)
    }

    /// A parent that others may write and that is not sticky is refused before anything is made in
    /// it: another account could rename Postern's directory away and put its own in place.
    @Test(arguments: [0o777, 0o770, 0o707] as [mode_t])
    func aParentOthersCanWriteIsRefused(parentMode: mode_t) throws {
        let share = directory.appendingPathComponent("share")
        try FileManager.default.createDirectory(at: share, withIntermediateDirectories: false)
        chmod(share.path, parentMode)
        if parentMode & 0o020 != 0 {
            // Group write counts only with others in the group: a group that is not ours
            // (nogroup, 65534; only root may hand a directory to it).
            try #require(chown(share.path, geteuid(), 65534) == 0, "needs root to give the directory another group")
            chmod(share.path, parentMode)
        }
        let settings = share.appendingPathComponent("me/postern")
        let error = #expect(throws: TorCoreError.self) { try AssistFiles.updateLimits(in: settings) { _ in } }
        #expect(error?.code == .filesystem)
        #expect(error?.message.contains("\(settings.path) cannot be used: its parent \(share.path) is writable by other users and not sticky") == true,
                "\(String(describing: error))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: share.path).isEmpty)
    }

    /// A group-writable parent whose group is this user's own private group with no other member
    /// (Debian's user private groups with umask 002 make ~/.config 0775) is fine.
    @Test func aParentWritableByOurOwnPrivateGroupIsAccepted() throws {
        try #require(PrivateDirectory.isOwnPrivateGroup(getegid()), "this user's group has other members here")
        let share = directory.appendingPathComponent("share")
        try FileManager.default.createDirectory(at: share, withIntermediateDirectories: false)
        try #require(chown(share.path, geteuid(), getegid()) == 0)
        chmod(share.path, 0o775)
        try AssistFiles.updateLimits(in: share.appendingPathComponent("me/postern")) { _ in }
        #expect(mode(share.appendingPathComponent("me/postern")) == 0o700)
    }

    /// A sticky parent that others may write (as /tmp) is fine when it is ours or root's.
    @Test func aStickyParentOfOursIsAccepted() throws {
        let share = directory.appendingPathComponent("share")
        try FileManager.default.createDirectory(at: share, withIntermediateDirectories: false)
        chmod(share.path, 0o1777)
        try AssistFiles.updateLimits(in: share.appendingPathComponent("me/postern")) { _ in }
        #expect(mode(share.appendingPathComponent("me/postern")) == 0o700)
    }

    /// Links above the settings directory (a home or ~/.config that is a link) are followed, and
    /// the directories made are made where the links lead.
    @Test func ourLinksAboveTheDirectoryAreFollowed() throws {
        let real = directory.appendingPathComponent("real")
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent("relative").path, withDestinationPath: "real")
        try FileManager.default.createSymbolicLink(at: directory.appendingPathComponent("absolute"), withDestinationURL: real)
        try AssistFiles.updateLimits(in: directory.appendingPathComponent("relative/.config/postern")) { _ in }
        try AssistFiles.updateLimits(in: directory.appendingPathComponent("absolute/../absolute/state")) { _ in }
        #expect(mode(real.appendingPathComponent(".config/postern")) == 0o700)
        #expect(mode(real.appendingPathComponent("state")) == 0o700)
    }

    /// A parent that belongs to another account is refused, sticky or not: its owner can replace
    /// what is in it. A link another account made in a sticky directory is not followed.
    @Test(.enabled(if: geteuid() == 0, "only root can give a directory to another user"))
    func whatAnotherAccountControlsAboveTheDirectoryIsRefused() throws {
        for (name, parentMode) in [("theirs", 0o755), ("theirs-sticky", 0o1777)] as [(String, mode_t)] {
            let parent = directory.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: false)
            #expect(chown(parent.path, 65534, 65534) == 0)
            chmod(parent.path, parentMode)
            let error = #expect(throws: TorCoreError.self) { try AssistFiles.updateLimits(in: parent.appendingPathComponent("postern")) { _ in } }
            #expect(error?.message.contains("its parent \(parent.path) belongs to another user (uid 65534)") == true, "\(String(describing: error))")
            #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path).isEmpty)
        }
        let sticky = directory.appendingPathComponent("sticky")
        try FileManager.default.createDirectory(at: sticky, withIntermediateDirectories: false)
        chmod(sticky.path, 0o1777)
        let real = directory.appendingPathComponent("real")
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: false)
        let theirLink = sticky.appendingPathComponent("link")
        try FileManager.default.createSymbolicLink(at: theirLink, withDestinationURL: real)
        #expect(lchown(theirLink.path, 65534, 65534) == 0)
        let error = #expect(throws: TorCoreError.self) { try AssistFiles.updateLimits(in: theirLink.appendingPathComponent("postern")) { _ in } }
        #expect(error?.message.contains("its parent \(theirLink.path) is a symbolic link made by another user (uid 65534)") == true,
                "\(String(describing: error))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: real.path).isEmpty)
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
