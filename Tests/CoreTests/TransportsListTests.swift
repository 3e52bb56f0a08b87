import BridgeConfig
import Testing
import TransportBase
@testable import PosternRuntime

/// Postern's own transports are listed once (`Transports.builtins`): the registry, the names that
/// plugins may not take without --replace-builtin and the argument rulebook all come from that list.
@Suite struct TransportsListTests {
    @Test func registryNamesAndRulesComeFromTheOneList() throws {
        let listed = Transports.builtins.map(\.rules.transport.rawValue)
        #expect(listed == ["obfs4", "snowflake", "webtunnel", "dnstt"])
        #expect(Transports.builtinNames == listed)
        #expect(try Transports.registry().names.map(\.rawValue).sorted() == listed.sorted())
        #expect(try Transports.registry(handshakeTimeout: .seconds(2)).names.map(\.rawValue).sorted() == listed.sorted())
        // The rulebook: each built-in's rules, plus meek_lite's (a plugin-only transport).
        #expect(Transports.argumentRules.transports.map(\.rawValue).sorted() == (listed + ["meek_lite"]).sorted())
        for builtin in Transports.builtins {
            #expect(Transports.argumentRules.rules(for: builtin.rules.transport) != nil)
            #expect(builtin.make(nil).name.rawValue == builtin.rules.transport.rawValue)
            #expect(builtin.make(.seconds(2)).name.rawValue == builtin.rules.transport.rawValue)
        }
    }
}
