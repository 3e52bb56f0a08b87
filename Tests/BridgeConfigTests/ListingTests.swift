import BridgeConfig
import PosternLinkSpec
import Testing

/// The text and JSON forms of the bridge commands' results, without the CLI: the bridge list,
/// the built-ins, export, the enable/disable/remove lines, a line split into arguments.
@Suite("Bridge listings and reports")
struct ListingTests {
    static let cert = "AAECAwQFBgcICQoLDA0ODxAREhPnmmF6TXg47PsvuX+k3kiOrk4wS+mRZ2wWxVv1Yq4kJA"
    static func obfs4(_ octet: Int) -> String {
        "obfs4 198.51.100.\(octet):443 0123456789ABCDEF0123456789ABCDEF012345\(10 + octet) cert=\(cert) iat-mode=0"
    }

    /// Two stored bridges, the second switched off.
    static func twoBridges() throws -> (BridgeConfiguration, BridgeID, BridgeID) {
        var configuration = BridgeConfiguration()
        let first = try configuration.add(try BridgeLine(validating: obfs4(1))).id
        let second = try configuration.add(try BridgeLine(validating: obfs4(2))).id
        try configuration.setEnabled(false, for: second)
        return (configuration, first, second)
    }

    @Test func storedBridgesAsATableWithCountsScrubbed() throws {
        let (configuration, first, second) = try Self.twoBridges()
        let listing = StoredBridgesListing(configuration, policy: .safe)
        #expect(listing.scrubbed)
        #expect(listing.bridges.map(\.id) == [first.rawValue, second.rawValue])
        #expect(listing.bridges.map(\.enabled) == [true, false])
        #expect(listing.text == """
            ID      STATE  TRANSPORT  BRIDGE
            \(first)  on     obfs4      obfs4 [scrubbed] [scrubbed] cert=[scrubbed] iat-mode=0
            \(second)  off    obfs4      obfs4 [scrubbed] [scrubbed] cert=[scrubbed] iat-mode=0
            2 bridges, 1 on
            """)
        #expect(BridgeListing.table(configuration.bridges, policy: .safe) == listing.text.split(separator: "\n").dropLast().joined(separator: "\n"))
        let unsafe = StoredBridgesListing(configuration, policy: .unsafe)
        #expect(!unsafe.scrubbed && unsafe.bridges.first?.line == Self.obfs4(1))
        #expect(StoredBridgesListing(BridgeConfiguration(), policy: .safe).text == "no bridges stored (add some with 'postern bridges add')")
    }

    @Test func enableDisableAndRemoveSayWhatChanged() throws {
        var (configuration, first, second) = try Self.twoBridges()
        #expect(try configuration.setEnabled(true, for: [first, second], policy: .safe)
                == ["\(first) (obfs4) was already on", "\(second) (obfs4) is now on"])
        #expect(configuration.bridges.allSatisfy { $0.isEnabled })
        #expect(try configuration.setEnabled(false, for: [second], policy: .safe) == ["\(second) (obfs4) is now off"])
        #expect(try configuration.remove([second], policy: .safe) == ["removed \(second) (obfs4)"])
        #expect(configuration.bridges.map(\.id) == [first])
        let unknown = try #require(BridgeID("abcdef"))
        do throws(BridgeConfigError) {
            _ = try configuration.remove([first, unknown], policy: .safe)
            Issue.record("an unknown ID was removed")
        } catch {
            #expect(error.code == .unknownBridgeID)
        }
    }

    @Test func exportFormatsSelectionAndTheTorrcFragment() throws {
        #expect(try BridgeExportFormat(validating: "torrc") == .torrc)
        #expect(try BridgeExportFormat(validating: "qr") == .qr)
        do throws(BridgeConfigError) {
            _ = try BridgeExportFormat(validating: "yaml")
            Issue.record("yaml was accepted")
        } catch {
            #expect(error.kind == .invalidInput && error.message == "unknown format 'yaml' (use torrc, json or qr)")
        }
        let (configuration, first, second) = try Self.twoBridges()
        #expect(try configuration.bridgesToExport(ids: [], enabledOnly: false).map(\.id) == [first, second])
        #expect(try configuration.bridgesToExport(ids: [second, first], enabledOnly: false).map(\.id) == [second, first])
        #expect(try configuration.bridgesToExport(ids: [], enabledOnly: true).map(\.id) == [first])
        func failure(_ configuration: BridgeConfiguration, _ ids: [BridgeID], enabledOnly: Bool) -> String? {
            do throws(BridgeConfigError) {
                _ = try configuration.bridgesToExport(ids: ids, enabledOnly: enabledOnly)
                return nil
            } catch {
                return error.message
            }
        }
        #expect(failure(configuration, [second], enabledOnly: true) == "none of the selected bridges is switched on")
        #expect(failure(BridgeConfiguration(), [], enabledOnly: false) == "there are no bridges to export (add some with 'postern bridges add')")
        #expect(failure(configuration, [try #require(BridgeID("abcdef"))], enabledOnly: false)
                == "there is no bridge with the ID abcdef (see 'postern bridges list')")
        let line = try BridgeLine(validating: Self.obfs4(1))
        #expect(BridgeLine.torrcFragment([line]) == "UseBridges 1\nBridge \(Self.obfs4(1))")
    }

    @Test func builtinListingByTransportWithItsSource() throws {
        let builtins = try BuiltinBridges.bundled()
        let snowflake = try builtins.listing(transport: .snowflake, policy: .safe)
        #expect(!snowflake.bridges.isEmpty && snowflake.bridges.allSatisfy { $0.transport == "snowflake" && $0.line.contains("[scrubbed]") })
        #expect(snowflake.scrubbed && snowflake.source == builtins.source)
        let lines = snowflake.text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first?.hasPrefix("TRANSPORT  GROUP") == true)
        #expect(lines.count == snowflake.bridges.count + 2)
        #expect(lines.last == "\(snowflake.bridges.count) built-in bridges; source: \(builtins.source)")
        let all = try builtins.listing(policy: .unsafe)
        #expect(!all.scrubbed && all.bridges.count == builtins.groups.values.map(\.count).reduce(0, +))
        #expect(all.bridges.map(\.group) == all.bridges.map(\.group).sorted())
        do throws(BridgeConfigError) {
            _ = try builtins.listing(transport: .webtunnel, policy: .safe)
            Issue.record("webtunnel has no built-ins")
        } catch {
            #expect(error.code == .noBuiltinBridges)
            #expect(error.message.hasPrefix("there are no built-in bridges for webtunnel (built-ins exist for meek_lite, obfs4, snowflake"))
        }
    }

    /// `postern bridges add obfs4 192.0.2.1:443 ...` unquoted: a word of a line as its own argument.
    @Test func aLineSplitIntoArgumentsIsNamedScrubbed() {
        #expect(BridgeImport.looksLikePieceOfALine("obfs4") && BridgeImport.looksLikePieceOfALine("cert=abc"))
        #expect(!BridgeImport.looksLikePieceOfALine("192.0.2.1:443") && !BridgeImport.looksLikePieceOfALine(Self.obfs4(1)))
        #expect(BridgeImport.splitLineProblem(in: [Self.obfs4(1)], policy: .safe) == nil)
        #expect(BridgeImport.splitLineProblem(in: ["obfs4"], policy: .safe) == nil, "one argument is one line")
        #expect(BridgeImport.splitLineProblem(in: ["obfs4", "192.0.2.1:443"], policy: .safe)?
                    .hasPrefix("'obfs4' is not a whole bridge line: each argument is one line, so put each line in quotes") == true)
        #expect(BridgeImport.splitLineProblem(in: ["192.0.2.1:443", "cert=secret"], policy: .safe)?.hasPrefix("'[scrubbed]' is not") == true)
        #expect(BridgeImport.splitLineProblem(in: ["192.0.2.1:443", "cert=secret"], policy: .unsafe)?.hasPrefix("'cert=secret' is not") == true)
    }
}
