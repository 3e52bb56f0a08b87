import PosternLinkSpec
import Testing
@testable import BridgeConfig

@Suite("tor configuration renderer and built-in bridges")
struct RendererTests {
    @Test func rendersUseBridgesBridgeLinesAndPluginLines() throws {
        let obfs4 = try obfs4Line(7)
        let snowflake = try BridgeLine(validating: "snowflake 192.0.2.3:80 url=https://b.example/")
        let vanilla = try BridgeLine(validating: "192.0.2.9:9001 \(Sample.fingerprint)")
        let rendered = try TorBridgeConfiguration(bridges: [obfs4, snowflake, vanilla])
        #expect(rendered.lines == ["UseBridges 1", "Bridge \(obfs4)", "Bridge snowflake 192.0.2.3:80 url=https://b.example/",
                                   "Bridge 192.0.2.9:9001 \(Sample.fingerprint)"])
        #expect(rendered.transportsNeedingPlugin == [.obfs4, .snowflake])
        #expect(try rendered.clientTransportPluginLines(ports: [.obfs4: 40001, .snowflake: 40002]) ==
                ["ClientTransportPlugin obfs4 socks5 127.0.0.1:40001", "ClientTransportPlugin snowflake socks5 127.0.0.1:40002"])
        do {
            _ = try rendered.clientTransportPluginLines(ports: [.obfs4: 40001])
            Issue.record("rendered without a snowflake port")
        } catch {
            #expect(error.code == .missingTransportPort)
            #expect(error.message == "no local port is known for the transport snowflake")
        }
    }

    @Test func hostNamesAndCollisionsGetPlaceholdersOnlyWhereTheAddressIsIgnored() throws {
        let named = try BridgeLine(validating: "snowflake sf.example.net:80 url=https://b.example/")
        let first = try BridgeLine(validating: "meek_lite 192.0.2.1:80 url=https://m.example/")
        let clash = try BridgeLine(validating: "webtunnel 192.0.2.1:80 url=https://w.example/")
        let obfs4A = try BridgeLine(validating: "obfs4 198.51.100.7:443 cert=\(Sample.cert) iat-mode=0")
        let obfs4B = try BridgeLine(validating: "obfs4 198.51.100.7:443 \(Sample.fingerprint) cert=\(Sample.cert) iat-mode=0")
        let rendered = try TorBridgeConfiguration(bridges: [named, first, clash, obfs4A, obfs4B])
        #expect(rendered.bridges.map(\.address.description) == ["192.0.2.2:80", "192.0.2.1:80", "192.0.2.3:80", "198.51.100.7:443"])
        #expect(Set(rendered.bridges.map(\.address)).count == rendered.bridges.count)
        #expect(rendered.warnings.map(\.code) == [.addressCollision])
        #expect(rendered.warnings[0].message == "bridge 5 (obfs4) has the same address as an earlier bridge and was left out; tor needs a distinct IP:port per bridge")
        for line in rendered.lines.dropFirst() {
            #expect(try BridgeLine(validating: line) == rendered.bridges[rendered.lines.firstIndex(of: line)! - 1])
        }
    }

    @Test func noBridgesIsAnError() {
        #expect { try TorBridgeConfiguration(bridges: []) } throws: { ($0 as? BridgeConfigError)?.code == .noBridgesForTransport }
    }

    @Test func bundledBuiltinsLoadWithProvenance() throws {
        let builtins = try BuiltinBridges.bundled()
        #expect(builtins.lines(for: .obfs4).count == 11)
        #expect(builtins.lines(for: .snowflake).count == 2)
        #expect(builtins.lines(for: .meekLite).count == 1)
        #expect(builtins.recommendedDefault == .obfs4)
        #expect(builtins.sourceCommit == "00ff7fc6dd757ce2383a74c0eafa4f5fbfef62a5")
        #expect(builtins.source.contains("tor-browser-build"))
        for line in builtins.groups.values.joined() { #expect(try BridgeLine(validating: line.description) == line) }
    }

    @Test func customBridgesAreNeverReplacedByBuiltins() throws {
        let builtins = try BuiltinBridges.bundled()
        let builtinSnowflake = builtins.lines(for: .snowflake)
        var configuration = BridgeConfiguration()

        // No custom bridges: built-ins are used and reported.
        var selection = BridgeSelection(configuration: configuration, transports: [.obfs4, .snowflake], builtins: builtins)
        #expect(selection.lines.count == 13)
        #expect(selection.transportsUsingBuiltins == [.obfs4, .snowflake])

        // A custom obfs4 bridge: only it is used for obfs4.
        try configuration.add(try obfs4Line(7))
        selection = BridgeSelection(configuration: configuration, transports: [.obfs4], builtins: builtins)
        #expect(selection.lines == [try obfs4Line(7)])
        #expect(selection.transportsUsingBuiltins.isEmpty)

        // A user's own version of a built-in snowflake line (same identity, other broker) that is
        // disabled: the built-in with that identity must not come back in its place.
        let own = try BridgeLine(validating: "snowflake \(builtinSnowflake[0].address) \(builtinSnowflake[0].fingerprint!) url=https://my-broker.example/")
        let ownID = try configuration.add(own).id
        try configuration.setEnabled(false, for: ownID)
        selection = BridgeSelection(configuration: configuration, transports: [.snowflake], builtins: builtins)
        #expect(selection.lines == [builtinSnowflake[1]])
        try configuration.setEnabled(true, for: ownID)
        selection = BridgeSelection(configuration: configuration, transports: [.snowflake], builtins: builtins)
        #expect(selection.lines == [own])
    }
}
