import BridgeConfig
import PosternLinkSpec
import Testing
@testable import PosternRuntime

/// What `postern bridges test` tests, without the CLI: the selection and what this build cannot test.
@Suite struct BridgeHealthSelectionTests {
    static func obfs4(_ octet: Int) throws -> BridgeLine {
        try BridgeLine(validating: "obfs4 198.51.100.\(octet):443 0123456789ABCDEF0123456789ABCDEF01234567 cert=AAECAwQFBgcICQoLDA0ODxAREhPnmmF6TXg47PsvuX+k3kiOrk4wS+mRZ2wWxVv1Yq4kJA iat-mode=0", rules: Transports.argumentRules)
    }

    @Test func storedIDsAndBuiltinSelections() throws {
        var configuration = BridgeConfiguration()
        let on = try configuration.add(try Self.obfs4(1)).id
        let off = try configuration.add(try Self.obfs4(2)).id
        try configuration.setEnabled(false, for: off)
        #expect(try BridgeHealthCheck.candidates(.stored(includeDisabled: false), in: configuration).map(\.id) == [on.rawValue])
        #expect(try BridgeHealthCheck.candidates(.stored(includeDisabled: true), in: configuration).map(\.id) == [on.rawValue, off.rawValue])
        #expect(try BridgeHealthCheck.candidates(.ids([off, on]), in: configuration).map(\.id) == [off.rawValue, on.rawValue])
        #expect(try BridgeHealthCheck.candidates(.stored(includeDisabled: true), in: configuration, transport: .snowflake).isEmpty)
        let unknown = try #require(BridgeID("abcdef"))
        do throws(BridgeConfigError) {
            _ = try BridgeHealthCheck.candidates(.ids([on, unknown]), in: configuration)
            Issue.record("an unknown ID was accepted")
        } catch {
            #expect(error.code == .unknownBridgeID && error.message == "there is no bridge with the ID abcdef")
        }
        let snowflake = try BridgeHealthCheck.candidates(.builtin, in: configuration, transport: .snowflake)
        #expect(!snowflake.isEmpty && snowflake.allSatisfy { $0.id.hasPrefix("builtin-snowflake-") && $0.line.transport == .snowflake })
    }

    /// meek_lite has no client in this build (only through a plugin): counted apart, the rest kept in order.
    @Test func untestableTransportsAreCountedApart() throws {
        let check = BridgeHealthCheck(registry: try Transports.registry(), timeout: .seconds(1))
        let builtins = try BridgeHealthCheck.candidates(.builtin, in: BridgeConfiguration())
        let split = check.splitUntestable(builtins)
        let meek = builtins.filter { $0.line.transport == .meekLite }
        #expect(!meek.isEmpty)
        #expect(split.untestable.map(\.transport) == ["meek_lite"] && split.untestable.map(\.count) == [meek.count])
        #expect(split.testable.map(\.id) == builtins.filter { $0.line.transport != .meekLite }.map(\.id))
    }
}
