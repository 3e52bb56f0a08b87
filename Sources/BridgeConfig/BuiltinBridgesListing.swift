import PosternLinkSpec
import PosternSystem

extension BuiltinBridges {
    /// One built-in bridge as `postern bridges builtin` lists it, scrubbed by the policy.
    public struct Entry: Encodable, Hashable, Sendable {
        public let group: String
        public let transport: String
        public let line: String
    }

    /// The built-in bridges as `postern bridges builtin` shows them: as JSON (the provenance, the
    /// entries, `scrubbed`) or as ``text``.
    public struct Listing: Encodable, Hashable, Sendable {
        public let source: String
        public let sourceCommit: String?
        public let date: String?
        public let recommendedDefault: String?
        public let bridges: [Entry]
        /// Whether the lines are scrubbed (the policy is not unsafe).
        public let scrubbed: Bool

        /// The table (TRANSPORT, GROUP, BRIDGE) and a count with the source.
        public var text: String {
            PlainText.table(header: ["TRANSPORT", "GROUP", "BRIDGE"], rows: bridges.map { [$0.transport, $0.group, $0.line] })
                + "\n" + "\(PlainText.counted(bridges.count, "built-in bridge")); source: \(source)"
        }
    }

    /// The listing of every built-in bridge, or only those of `transport`, groups in name order.
    /// Throws `noBuiltinBridges` (naming the transports that have some) when `transport` has none.
    public func listing(transport: TransportName? = nil, policy: LoggingPolicy) throws(BridgeConfigError) -> Listing {
        var entries: [Entry] = []
        for group in groups.keys.sorted() {
            for line in groups[group] ?? [] where transport == nil || line.transport == transport {
                entries.append(Entry(group: group, transport: line.transport.description(policy: policy),
                                     line: line.description(policy: policy)))
            }
        }
        if let transport, entries.isEmpty {
            let available = transports.sorted().map(\.rawValue).joined(separator: ", ")
            throw BridgeConfigError(code: .noBuiltinBridges, kind: .conflict,
                                    message: "there are no built-in bridges for \(transport.description(policy: policy)) (built-ins exist for \(available))")
        }
        return Listing(source: source, sourceCommit: sourceCommit, date: date, recommendedDefault: recommendedDefault?.rawValue,
                       bridges: entries, scrubbed: !policy.unsafeLogging)
    }
}

extension BridgeConfigError.Code {
    /// No built-in bridge of the transport asked for.
    public static let noBuiltinBridges = Self("no-builtin-bridges")
}
