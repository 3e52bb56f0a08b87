import Foundation
import PosternLinkSpec

/// Tor Browser's built-in bridges, shipped as a resource with its provenance.
///
/// They are public and widely blocked, so they are a fallback: `BridgeSelection` uses them only for
/// transports where the user has no enabled bridge of their own, and a built-in line never replaces
/// a custom bridge with the same identity or address.
public struct BuiltinBridges: Hashable, Sendable {
    /// Where the list comes from, as recorded in the resource.
    public let source: String
    /// The upstream commit named in `source`, when there is one.
    public let sourceCommit: String?
    /// The date the list was taken, when the resource records one (`"date"` key).
    public let date: String?
    public let recommendedDefault: TransportName?
    /// Lines by group name as in Tor Browser (`obfs4`, `snowflake`, `meek-azure`).
    public let groups: [String: [BridgeLine]]

    /// All lines of one transport, in a stable order (groups sorted by name).
    public func lines(for transport: TransportName) -> [BridgeLine] {
        groups.keys.sorted().flatMap { groups[$0]! }.filter { $0.transport == transport }
    }

    public var transports: Set<TransportName> { Set(groups.values.joined().map(\.transport)) }

    /// The list bundled with Postern, its lines checked by `rules`.
    public static func bundled(rules: BridgeArgumentRulebook) throws(BridgeConfigError) -> BuiltinBridges {
        guard let url = Bundle.module.url(forResource: "builtin-bridges", withExtension: "json"),
              let data = try? Data(contentsOf: url) else {
            throw BridgeConfigError(code: .builtinsUnavailable, kind: .storage,
                                    message: "the built-in bridge list is missing from Postern's resources")
        }
        return try BuiltinBridges(jsonData: data, rules: rules)
    }

    /// A list from bridge lines, one group per transport (for private networks and tests, which
    /// replace the bundled list with their own bridges).
    public init(source: String, lines: [BridgeLine]) {
        self.source = source
        sourceCommit = nil
        date = nil
        recommendedDefault = nil
        groups = Dictionary(grouping: lines, by: \.transport.rawValue)
    }

    /// Parses a list in the resource's format. Every line must validate by `rules`; a bad line is
    /// an error naming its group and position (not its content).
    public init(jsonData: Data, rules: BridgeArgumentRulebook) throws(BridgeConfigError) {
        struct File: Decodable {
            let source: String
            let date: String?
            let recommendedDefault: String?
            let bridges: [String: [String]]
        }
        func invalid(_ reason: String) -> BridgeConfigError {
            BridgeConfigError(code: .builtinsUnavailable, kind: .storage, message: "the built-in bridge list is invalid: \(reason)")
        }
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: jsonData)
        } catch {
            throw invalid("not the expected JSON shape")
        }
        var groups: [String: [BridgeLine]] = [:]
        for (group, texts) in file.bridges {
            var lines: [BridgeLine] = []
            for (offset, text) in texts.enumerated() {
                do {
                    lines.append(try BridgeLine(validating: text, rules: rules))
                } catch {
                    throw invalid("\(group) line \(offset + 1): \(error.message)")
                }
            }
            groups[group] = lines
        }
        source = file.source
        date = file.date
        recommendedDefault = file.recommendedDefault.flatMap { TransportName.known(matching: $0) ?? TransportName($0) }
        self.groups = groups
        sourceCommit = file.source.split(whereSeparator: { !$0.isHexDigit }).first { $0.count == 40 }.map(String.init)
    }
}
