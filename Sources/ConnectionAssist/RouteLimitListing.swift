import Foundation
import PosternTor
import PosternLinkSpec
import PosternSystem

extension RouteLimits {
    /// "ceiling 45 s, moves on after 30 s without progress".
    public var summary: String {
        "ceiling \(PlainText.number(ceiling.seconds)) s, moves on after \(PlainText.number(noProgressWindow.seconds)) s without progress"
    }
}

extension RouteLimitTable {
    /// Sets one kind's limits from "KIND=CEILING/WINDOW" in seconds (e.g. "direct=45/30"), as
    /// `postern run --route-timeout` takes them. The error (kind `usage`) reads after the
    /// setting's name: "needs KIND=CEILING/WINDOW ..." or "direct=5: <why>".
    public mutating func set(parsingOverride text: String) throws(TorCoreError) {
        guard let equals = text.firstIndex(of: "=") else {
            throw TorCoreError(.invalidConfiguration, kind: .usage, "needs KIND=CEILING/WINDOW (e.g. direct=45/30), not '\(text)'")
        }
        do throws(TorCoreError) {
            let kind = try Self.kind(validating: String(text[..<equals]))
            set(try RouteLimits(parsing: String(text[text.index(after: equals)...])), forKind: kind)
        } catch {
            throw TorCoreError(code: error.code, kind: error.kind, message: "\(text): \(error.message)")
        }
    }

    /// One route kind's limits and whether they are the default or a setting.
    public struct Listing: Sendable, Hashable, Encodable {
        /// "direct" or a transport name.
        public let kind: String
        public let ceilingSeconds: Double
        public let noProgressSeconds: Double
        /// "default" or "setting".
        public let source: String
    }

    /// Every route kind's limits: direct, vanilla, obfs4 and snowflake, then the other kinds with
    /// settings, sorted.
    public var listing: [Listing] {
        var kinds = ["direct", "vanilla", "obfs4", "snowflake"]
        kinds += overrides.keys.filter { !kinds.contains($0) }.sorted()
        return kinds.map { kind in
            let limits = limits(for: kind == "direct" ? nil : TransportName(kind))
            return Listing(kind: kind, ceilingSeconds: limits.ceiling.seconds, noProgressSeconds: limits.noProgressWindow.seconds,
                           source: overrides[kind] == nil ? "default" : "setting")
        }
    }

    /// ``listing`` as a table: ROUTE, CEILING, NO-PROGRESS (in seconds), SOURCE.
    public var textTable: String {
        let rows = listing.map { [$0.kind, "\(PlainText.number($0.ceilingSeconds)) s", "\(PlainText.number($0.noProgressSeconds)) s", $0.source] }
        return PlainText.table(header: ["ROUTE", "CEILING", "NO-PROGRESS", "SOURCE"], rows: rows)
    }
}
