import Foundation
import PosternLinkSpec
import Testing
@testable import BridgeConfig

/// The paste import as a library (what `postern bridges add` and `import` render).
@Suite("Bridge import")
struct BridgeImportTests {
    static let paste = """
    # my bridges
    Bridge \(Sample.obfs4)
    obfs4 198.51.100.8:443 cert=short iat-mode=0
    """

    @Test func goodLinesAreStoredAndEveryLineIsReported() throws {
        let directory = TemporaryDirectory()
        let store = try BridgeStore(directory: directory.path)
        let report = try BridgeImport.run(Self.paste, source: "standard input", into: store, options: .init())
        #expect(report.counts.stored == 1 && report.counts.rejected == 1)
        #expect(report.changed && report.scrubbed && report.failed)
        let stored = try store.load().bridges
        #expect(stored.map(\.line) == [try BridgeLine(validating: Sample.obfs4)])
        #expect(report.items.map(\.status) == [.stored, .rejected])
        #expect(report.items[0].line == 2 && report.items[0].id == stored[0].id.rawValue)
        #expect(report.items[0].text == "line 2: stored as \(stored[0].id): obfs4 [scrubbed] [scrubbed] cert=[scrubbed] iat-mode=0")
        #expect(report.items[1].text.hasPrefix("line 3: rejected: "))
        #expect(report.summary == "stored 1 bridge; 1 line rejected")

        // The same paste again: already stored, nothing changed.
        let again = try BridgeImport.run(Self.paste, source: "standard input", into: store, options: .init())
        #expect(again.items.map(\.status) == [.alreadyStored, .rejected] && !again.changed)
        #expect(again.summary == "stored 0 bridges; 1 already stored; 1 line rejected")
    }

    @Test func dryRunAndAllOrNothingStoreNothing() throws {
        let directory = TemporaryDirectory()
        let store = try BridgeStore(directory: directory.path)
        let dry = try BridgeImport.run(Self.paste, source: "a.txt", into: store, options: .init(dryRun: true))
        #expect(dry.items.map(\.status) == [.wouldStore, .rejected] && !dry.changed)
        #expect(dry.summary == "dry run, nothing stored: 1 bridge would be stored; 1 line rejected")
        let strict = try BridgeImport.run(Self.paste, source: "a.txt", into: store, options: .init(allOrNothing: true))
        #expect(strict.counts.heldBack == 1 && !strict.changed && strict.failed)
        #expect(strict.summary == "stored nothing (--all-or-nothing); 1 line rejected")
        #expect(try store.load().bridges.isEmpty)
    }

    @Test func nothingFoundFailsAndTheJSONKeepsItsShape() throws {
        let directory = TemporaryDirectory()
        let store = try BridgeStore(directory: directory.path)
        let report = try BridgeImport.run("# only a comment\n", source: "the arguments", into: store, options: .init())
        #expect(report.failed && report.items.isEmpty)
        #expect(report.summary == "no bridge lines found in the arguments; nothing stored")
        let object = try JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any]
        #expect(Set(object?.keys.map { $0 } ?? []) == ["source", "dryRun", "allOrNothing", "changed", "scrubbed", "counts", "items", "summary"])
    }
}
