import BridgeConfig
import PosternLinkSpec

/// What `postern bridges test` tests, as a library: the selection of bridges and the ones this
/// build cannot test.
extension BridgeHealthCheck {
    /// Which bridges to test.
    public enum Selection: Sendable, Hashable {
        /// The enabled stored bridges; with `includeDisabled`, every stored one.
        case stored(includeDisabled: Bool)
        /// Stored bridges by ID, in this order; an unknown ID is an error.
        case ids([BridgeID])
        /// The bundled built-in bridges.
        case builtin
    }

    /// The candidates of `selection` from `configuration`, only those of `transport` when given.
    /// An unknown ID throws `unknownBridgeID` (naming it) before anything is tested.
    public static func candidates(_ selection: Selection, in configuration: BridgeConfiguration,
                                  transport: TransportName? = nil) throws(BridgeConfigError) -> [Candidate] {
        var selected: [Candidate]
        switch selection {
        case .builtin:
            selected = candidates(builtins: try BuiltinBridges.bundled(rules: Transports.argumentRules))
        case .ids(let ids):
            if let missing = ids.first(where: { configuration.bridge($0) == nil }) {
                throw BridgeConfigError(code: .unknownBridgeID, kind: .conflict, message: "there is no bridge with the ID \(missing)")
            }
            selected = candidates(configuration, ids: ids)
        case .stored(let includeDisabled):
            selected = candidates(configuration, includeDisabled: includeDisabled)
        }
        if let transport { selected = selected.filter { $0.line.transport == transport } }
        return selected
    }

    /// The candidates of transports this build has no client for (``canTest(_:)``), counted by
    /// transport name, and the others in their order.
    public func splitUntestable(_ candidates: [Candidate]) -> (testable: [Candidate], untestable: [(transport: String, count: Int)]) {
        let lacking = Dictionary(grouping: candidates.filter { !canTest($0.line) }, by: { $0.line.transport.rawValue })
        return (candidates.filter { lacking[$0.line.transport.rawValue] == nil },
                lacking.sorted { $0.key < $1.key }.map { ($0.key, $0.value.count) })
    }
}
