import BridgeConfig
import PosternLinkSpec
import PosternSystem

/// The transport setting and what it means with the stored bridges: `postern transport`'s result,
/// as JSON (`transport`, `known`, `enabledBridges`, `torEnabled`) or as ``lines(policy:lastGoodRoute:)``.
public struct TransportSetting: Sendable, Encodable {
    /// The chosen transport: auto, direct or a transport name.
    public let selection: TransportSelection
    /// The settings the selection was read from (for the bridge counts).
    public let configuration: BridgeConfiguration

    /// The setting of `configuration` (its ``BridgeConfiguration/transport``).
    public init(_ configuration: BridgeConfiguration) {
        selection = configuration.transport
        self.configuration = configuration
    }

    /// Whether Postern knows the transport; auto and direct are always known.
    public var isKnown: Bool { selection.transport.map(\.isKnown) ?? true }

    /// How many enabled bridges the chosen transport has; nil for auto and direct.
    public var enabledBridges: Int? { selection.transport.map { configuration.enabledBridges(of: $0).count } }

    /// "transport: obfs4", then which bridges that means (or what auto and direct do), a note when
    /// Tor is off, and for auto the route that connected last time (`lastGoodRoute`,
    /// ``AssistFiles/readLastGoodRoute(in:)``), which goes first.
    public func lines(policy: LoggingPolicy, lastGoodRoute: String? = nil) -> [String] {
        var lines = ["transport: \(Self.name(selection, policy: policy))"]
        switch selection.transport {
        case nil where selection == .auto:
            lines.append("Connection assist: Postern tries direct, your obfs4 bridges, the built-in obfs4 bridges, snowflake and other transports in turn, the one that worked last time first ('postern transport limits' shows how long each gets).")
        case nil:
            lines.append("Tor connects without bridges (visible to a censor as Tor traffic).")
        case let transport?:
            let name = transport.description(policy: policy)
            let enabled = configuration.enabledBridges(of: transport).count
            if enabled > 0 {
                lines.append("uses your \(PlainText.counted(enabled, "enabled \(name) bridge"))")
            } else if let builtins = try? BuiltinBridges.bundled(rules: Transports.argumentRules), !builtins.lines(for: transport).isEmpty {
                lines.append("you have no enabled \(name) bridges; Postern uses the \(builtins.lines(for: transport).count) built-in ones")
            } else {
                lines.append("you have no enabled \(name) bridges and there are no built-in ones: add some with 'postern bridges add'")
            }
        }
        if !configuration.torEnabled { lines.append("note: Tor is off, so no transport is used ('postern tor on' to turn it on)") }
        if selection == .auto, let lastGoodRoute { lines.append("last good route: \(lastGoodRoute) (tried first)") }
        return lines
    }

    /// For a transport Postern does not know: that it was saved but connecting will fail unless
    /// such a transport exists. Nil for a known one.
    public func unknownTransportWarning(policy: LoggingPolicy) -> String? {
        guard !isKnown else { return nil }
        let known = TransportName.known.map(\.rawValue).joined(separator: ", ")
        return "warning: \(Self.name(selection, policy: policy)) is not a transport Postern knows (\(known)); it was saved, but connecting will fail unless such a transport exists"
    }

    /// A setting as people read it: auto, direct or the transport's name (scrubbed by `policy`).
    public static func name(_ selection: TransportSelection, policy: LoggingPolicy) -> String {
        selection.transport?.description(policy: policy) ?? selection.rawValue
    }

    private enum CodingKeys: String, CodingKey { case transport, known, enabledBridges, torEnabled }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(selection.rawValue, forKey: .transport)
        try container.encode(isKnown, forKey: .known)
        try container.encodeIfPresent(enabledBridges, forKey: .enabledBridges)
        try container.encode(configuration.torEnabled, forKey: .torEnabled)
    }
}
