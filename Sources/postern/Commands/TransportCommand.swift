import BridgeConfig
import Foundation
import ConnectionAssist
import PosternTor
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
        subcommands: [.transportUse, .transportLimits, .transportPlugin, .transportFingerprint],
        run: { invocation in
            try invocation.requireNoPositionals()
            let setting = TransportSetting(try invocation.bridgeStore().load())
            let lastGood = AssistFiles.readLastGoodRoute(in: invocation.paths.stateDirectory)
            try invocation.render(setting, text: setting.lines(policy: invocation.loggingPolicy, lastGoodRoute: lastGood).joined(separator: "\n"))
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
            let setting = TransportSetting(configuration)
            if let warning = setting.unknownTransportWarning(policy: policy) { invocation.output.error(warning) }
            var lines = setting.lines(policy: policy)
            if previous != selection { lines[0] += " (was \(TransportSetting.name(previous, policy: policy)))" }
            invocation.output.print(lines.joined(separator: "\n"))
            return 0
        })
}
