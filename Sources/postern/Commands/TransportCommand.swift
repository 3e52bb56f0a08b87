import PosternSystem
import BridgeConfig
import Foundation
import PosternCore
import PosternRuntime

extension Command {
    static let transport = Command(
        name: "transport",
        summary: "Show or choose how Postern reaches Tor (auto, direct, obfs4, snowflake, ...)",
        details: """
        Without a command, shows the current choice. auto: connection assist tries direct, your obfs4
        bridges, the built-in obfs4 bridges, snowflake and other transports in turn, the route that
        worked last time first; direct: no bridges; a transport name: use your enabled bridges of that
        transport, or the built-in ones.
        """,
        options: [.flag("json", "print the choice as JSON")],
        subcommands: [.transportUse, .transportLimits, .transportPlugin],
        run: { invocation in
            try invocation.requireNoPositionals()
            let configuration = try invocation.bridgeStore().load()
            let selection = configuration.transport
            if invocation.json {
                struct Shown: Encodable { let transport: String; let known: Bool; let enabledBridges: Int?; let torEnabled: Bool }
                let enabled = selection.transport.map { configuration.enabledBridges(of: $0).count }
                try invocation.output.json(Shown(transport: selection.rawValue, known: isKnown(selection),
                                                 enabledBridges: enabled, torEnabled: configuration.torEnabled))
            } else {
                var lines = describe(selection, configuration: configuration, policy: invocation.loggingPolicy)
                if selection == .auto, let last = AssistFiles.readLastGoodRoute(in: invocation.paths.stateDirectory) {
                    lines.append("last good route: \(last) (tried first)")
                }
                invocation.output.print(lines.joined(separator: "\n"))
            }
            return 0
        })

    static let transportUse = Command(
        name: "use",
        summary: "Choose the transport: auto, direct, or a transport name",
        synopsis: "NAME",
        details: "Names Postern does not know are accepted if they are valid transport names, with a warning.",
        run: { invocation in
            let positionals = try invocation.requirePositionals("a transport NAME (auto, direct, obfs4, snowflake, ...)")
            guard positionals.count == 1 else { throw invocation.usageError("use takes one NAME, got \(positionals.count)") }
            let selection: TransportSelection
            do throws(BridgeConfigError) {
                selection = try TransportSelection(validating: positionals[0])
            } catch {
                throw invocation.usageError("'\(positionals[0])': \(error.message)")
            }
            let policy = invocation.loggingPolicy
            let (previous, configuration) = try invocation.bridgeStore().update { configuration in
                let previous = configuration.transport
                configuration.transport = selection
                return (previous, configuration)
            }
            if !isKnown(selection) {
                let known = TransportName.known.map(\.rawValue).joined(separator: ", ")
                invocation.output.error("warning: \(selection.transport?.description(policy: policy) ?? selection.rawValue) is not a transport Postern knows (\(known)); it was saved, but connecting will fail unless such a transport exists")
            }
            var lines = describe(selection, configuration: configuration, policy: policy)
            if previous != selection { lines[0] += " (was \(previous.transport?.description(policy: policy) ?? previous.rawValue))" }
            invocation.output.print(lines.joined(separator: "\n"))
            return 0
        })

    private static func isKnown(_ selection: TransportSelection) -> Bool {
        selection.transport.map(\.isKnown) ?? true
    }

    /// "transport: obfs4" and a line on which bridges that means.
    private static func describe(_ selection: TransportSelection, configuration: BridgeConfiguration, policy: LoggingPolicy) -> [String] {
        var lines = ["transport: \(selection.transport?.description(policy: policy) ?? selection.rawValue)"]
        switch selection {
        case .auto:
            lines.append("Connection assist: Postern tries direct, your obfs4 bridges, the built-in obfs4 bridges, snowflake and other transports in turn, the one that worked last time first ('postern transport limits' shows how long each gets).")
        case .direct:
            lines.append("Tor connects without bridges (visible to a censor as Tor traffic).")
        default:
            let transport = selection.transport!
            let enabled = configuration.enabledBridges(of: transport).count
            if enabled > 0 {
                lines.append("uses your \(PlainText.counted(enabled, "enabled \(transport.description(policy: policy)) bridge"))")
            } else if let builtins = try? BuiltinBridges.bundled(rules: Transports.argumentRules), !builtins.lines(for: transport).isEmpty {
                lines.append("you have no enabled \(transport.description(policy: policy)) bridges; Postern uses the \(builtins.lines(for: transport).count) built-in ones")
            } else {
                lines.append("you have no enabled \(transport.description(policy: policy)) bridges and there are no built-in ones: add some with 'postern bridges add'")
            }
        }
        if !configuration.torEnabled { lines.append("note: Tor is off, so no transport is used ('postern tor on' to turn it on)") }
        return lines
    }
}
