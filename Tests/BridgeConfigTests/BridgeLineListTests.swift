import Foundation
import Testing
@testable import BridgeConfig

/// A bridge line list file (`postern run --bridges-file`, `--builtin-bridges`): numbered lines,
/// comments and blanks skipped, the first bad line named.
@Suite struct BridgeLineListTests {
    static let vanilla = "198.51.100.9:9001 \(Sample.fingerprint)"

    @Test func numberedLinesSkipBlanksCommentsAndTheBridgeKeyword() {
        let text = "# a comment\n\n  \(Sample.obfs4)  \r\n// another\nBridge   \(Self.vanilla)\n\t\n"
        let lines = BridgeLineList.numberedLines(in: text)
        #expect(lines.map(\.number) == [3, 5])
        #expect(lines.map(\.text) == [Sample.obfs4, Self.vanilla])
        #expect(BridgeLineList.numberedLines(in: "").isEmpty)
        // Line ends as Windows and old Macs write them, and a byte order mark, as a paste allows.
        let crlf = BridgeLineList.numberedLines(in: "\u{FEFF}\(Sample.obfs4)\r\n\r\n\(Self.vanilla)\r# c\r")
        #expect(crlf.map(\.number) == [1, 3])
        #expect(crlf.map(\.text) == [Sample.obfs4, Self.vanilla])
    }

    @Test func parseTakesEveryLineOrNamesTheFirstBadOne() throws {
        let lines = try BridgeLineList.parse("\(Sample.obfs4)\n# skipped\n\(Self.vanilla)\n", rules: posternRules)
        #expect(lines.map(\.transport) == [.obfs4, .vanilla])
        do {
            _ = try BridgeLineList.parse("\(Sample.obfs4)\n\nobfs4 198.51.100.7:443 cert=short iat-mode=0\nnot a bridge\n", rules: posternRules)
            Issue.record("a bad line was accepted")
        } catch {
            #expect(error.location == PasteLocation(line: 3))
            #expect(error.message.hasPrefix("line 3: "))
            #expect(error.code == .badCert)
        }
    }

    @Test func builtinListFromLinesOrJSON() throws {
        let fromLines = try BuiltinBridges(listData: Data("\(Sample.obfs4)\n\(Self.vanilla)\n".utf8), source: "/tmp/list.txt", rules: posternRules)
        #expect(fromLines.source == "/tmp/list.txt")
        #expect(fromLines.lines(for: .obfs4).count == 1)
        #expect(fromLines.transports == [.obfs4, .vanilla])
        let json = #"  {"source": "test list", "bridges": {"obfs4": ["\#(Sample.obfs4)"]}}"#
        let fromJSON = try BuiltinBridges(listData: Data(json.utf8), source: "/tmp/list.json", rules: posternRules)
        #expect(fromJSON.source == "test list")
        #expect(fromJSON.groups["obfs4"]?.count == 1)
        // An editor's byte order mark before the JSON still reads as JSON.
        let withMark = try BuiltinBridges(listData: Data([0xEF, 0xBB, 0xBF]) + Data(json.utf8), source: "/tmp/list.json", rules: posternRules)
        #expect(withMark.source == "test list" && withMark.groups["obfs4"]?.count == 1)
        // A bad JSON list is one error without a line; a bad line list names the line.
        #expect(throws: BridgeConfigError.self) { try BuiltinBridges(listData: Data("{ nope".utf8), source: "x", rules: posternRules) }
        do {
            _ = try BuiltinBridges(listData: Data("{ nope".utf8), source: "x", rules: posternRules)
        } catch {
            #expect(error.location == nil)
            #expect(error.code == .builtinsUnavailable)
        }
        do {
            _ = try BuiltinBridges(listData: Data("\n\nnot a bridge\n".utf8), source: "x", rules: posternRules)
            Issue.record("a bad line was accepted")
        } catch {
            #expect(error.location?.line == 3)
        }
    }
}
