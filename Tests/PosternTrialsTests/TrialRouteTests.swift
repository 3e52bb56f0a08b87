import BridgeConfig
import Foundation
import PosternLinkSpec
import Testing
@testable import PosternTrials

/// Route names into routes (`postern ab ROUTE...`), refused before any child starts.
@Suite struct TrialRouteTests {
    static let obfs4 = try! BridgeLine(validating: "obfs4 198.51.100.7:443 0123456789ABCDEF0123456789ABCDEF01234567 cert=AAECAwQFBgcICQoLDA0ODxAREhPnmmF6TXg47PsvuX+k3kiOrk4wS+mRZ2wWxVv1Yq4kJA iat-mode=0", rules: .syntaxOnly)
    static let snowflake = try! BridgeLine(validating: "snowflake 192.0.2.3:80 2B280B23E1107BB62ABFC40DDCC8824814F80A72 url=https://broker.example/", rules: .syntaxOnly)

    @Test func timeoutsComeFromTheDefaultsTheGlobalOneAndPerRoute() throws {
        let routes = ["direct", "Snowflake", "obfs4", "plugin:snowflake"]
        #expect(try TrialRoute.timeouts(for: routes, given: []) == ["direct": 45, "snowflake": 300, "obfs4": 120, "plugin:snowflake": 300])
        #expect(try TrialRoute.timeouts(for: routes, given: ["60", "OBFS4=30"]) == ["direct": 60, "snowflake": 60, "obfs4": 30, "plugin:snowflake": 60])
        for bad in ["0", "obfs4=-1", "obfs4=inf", "meek=10"] {
            do throws(TrialError) {
                _ = try TrialRoute.timeouts(for: routes, given: [bad])
                Issue.record("'\(bad)' was accepted")
            } catch {
                #expect(error.kind == .usage && error.code == .invalidInput, "\(bad)")
            }
        }
    }

    @Test func namesBecomeRoutesWithTheirBridges() throws {
        var configuration = BridgeConfiguration()
        _ = try configuration.add(Self.obfs4)
        let builtins = BuiltinBridges(source: "test", lines: [Self.snowflake])
        let routes = try TrialRoute.resolve(["obfs4", "Snowflake", "direct"], timeouts: ["obfs4": 30, "snowflake": 300, "direct": 45],
                                            configuration: configuration, available: ["obfs4", "snowflake", "webtunnel"],
                                            builtins: builtins, servingPlugin: { _ in nil })
        #expect(routes.map(\.name) == ["obfs4", "snowflake", "direct"])
        #expect(routes.map(\.bridges) == [[Self.obfs4], [Self.snowflake], []])
        #expect(routes.map(\.timeout) == [.seconds(30), .seconds(300), .seconds(45)])
    }

    /// `postern ab dnstt ...`: dnstt is a route like any built-in transport, with the stored dnstt
    /// lines (whatever way to the resolver they name) and the fallback timeout, as connection assist's.
    @Test func dnsttIsARouteWithItsStoredLines() throws {
        let key = String(repeating: "ab", count: 32)
        let lines = try ["udp=198.51.100.53:53", "dot=198.51.100.53:853", "doh=https://198.51.100.53/dns-query"].enumerated().map {
            try BridgeLine(validating: "dnstt 192.0.2.4:\($0.offset + 1) \($0.element) pubkey=\(key) domain=t.example.com", rules: .syntaxOnly)
        }
        var configuration = BridgeConfiguration()
        for line in lines { _ = try configuration.add(line) }
        _ = try configuration.add(Self.obfs4)
        let names = ["DNSTT", "obfs4"]
        let routes = try TrialRoute.resolve(names, timeouts: try TrialRoute.timeouts(for: names, given: []), configuration: configuration,
                                            available: ["dnstt", "obfs4", "snowflake", "webtunnel"], builtins: nil,
                                            servingPlugin: { _ in nil })
        #expect(routes.map(\.name) == ["dnstt", "obfs4"])
        #expect(routes.first?.bridges == lines)
        #expect(routes.first?.plugins.isEmpty == true, "built in: no plugin")
        #expect(routes.first?.timeout == .seconds(TrialRoute.fallbackTimeout))
        do throws(TrialError) {
            _ = try TrialRoute.resolve(["dnstt"], timeouts: [:], configuration: configuration, available: ["obfs4"],
                                       builtins: nil, servingPlugin: { _ in nil })
            Issue.record("dnstt was accepted by a build without it")
        } catch {
            #expect(error.message == "the dnstt transport is not available in this build (available: vanilla, obfs4)")
        }
    }

    @Test func unusableRoutesAreRefusedWithTheirKind() throws {
        let configuration = BridgeConfiguration()
        func refusal(_ names: [String]) -> TrialError? {
            do throws(TrialError) {
                _ = try TrialRoute.resolve(names, timeouts: [:], configuration: configuration, available: ["obfs4"],
                                           builtins: BuiltinBridges(source: "test", lines: [Self.obfs4]), servingPlugin: { _ in nil })
                return nil
            } catch {
                return error
            }
        }
        #expect(refusal(["auto"])?.message == "'auto' is not a route: use direct, vanilla or a transport name (obfs4)")
        #expect(refusal(["snowflake"])?.message == "the snowflake transport is not available in this build (available: vanilla, obfs4)")
        #expect(refusal(["obfs4", "OBFS4"])?.message == "the route obfs4 is given twice")
        #expect(refusal(["direct", "direct"])?.message == "the route direct is given twice")
        #expect(refusal(["plugin:obfs4"])?.message == "'plugin:obfs4': no plugin serves obfs4 (see 'postern transport plugin list')")
        #expect([["auto"], ["snowflake"], ["obfs4", "obfs4"], ["plugin:obfs4"]].allSatisfy { refusal($0)?.kind == .usage })
        let none = refusal(["vanilla"])
        #expect(none?.kind == .failure && none?.code == .noBridges)
    }
}
