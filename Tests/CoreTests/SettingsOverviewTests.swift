import BridgeConfig
import Foundation
import PosternLinkSpec
import PosternRuntime
import Testing

/// `postern config show`'s overview: defaults before anything is stored, then the stored values
/// with the bridges scrubbed unless the policy is unsafe.
@Suite struct SettingsOverviewTests {
    @Test func showsDefaultsThenTheStoredSettingsScrubbed() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-overview-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try BridgeStore(directory: directory.path, rules: Transports.argumentRules)

        let fresh = try SettingsOverview(store: store, policy: .safe)
        #expect(!fresh.fileExists && fresh.torEnabled && fresh.bridges.isEmpty && fresh.scrubbed)
        #expect(fresh.text.hasPrefix("file: \(store.filePath) (not written yet; defaults shown)\nschema version: \(BridgeStore.currentVersion)\ntor: on\n"))
        #expect(fresh.text.contains("\nbridges: 0 (0 on)\nrelays: \(NostrRelayURL.builtin.count) built-in, 0 custom\n"))

        let line = try BridgeLine.parse("192.0.2.7:443 4352E58420E68F5E40BF7C74FADDCCD9D1349413", rules: Transports.argumentRules, logging: .safe).line
        try store.update { configuration in
            _ = try configuration.add(line)
            configuration.torEnabled = false
        }
        let stored = try SettingsOverview(store: store, policy: .safe)
        #expect(stored.fileExists && !stored.torEnabled && stored.bridges.count == 1)
        #expect(stored.text.contains("\ntor: off\n"))
        #expect(stored.text.contains("\nbridges: 1 (1 on)\n  ID "))
        #expect(!stored.text.contains("192.0.2.7"))
        let unsafe = try SettingsOverview(store: store, policy: .unsafe)
        #expect(unsafe.text.contains("192.0.2.7:443") && !unsafe.scrubbed)
    }
}
