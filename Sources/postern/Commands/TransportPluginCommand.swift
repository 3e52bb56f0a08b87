import PosternLinkSpec
import PosternRuntime
import BridgeConfig
import Foundation

extension Command {
    static let transportPlugin = Command(
        name: "plugin",
        summary: "External transports: pt-spec managed clients such as obfs4proxy or snowflake-client",
        details: """
        A plugin is a program that speaks the pluggable-transport spec (a managed client, as tor runs
        one with 'ClientTransportPlugin NAME exec PATH'). Postern starts it itself when a bridge of one
        of its transports is used (by 'run', connection assist, 'ab' and 'bridges test') and stops it
        afterwards. A plugin for a transport Postern lacks (meek_lite, ...) is used for that transport's
        bridges, built-in ones included. A plugin never replaces Postern's own obfs4, snowflake or
        webtunnel unless it was added with --replace-builtin; without it, it is still there to compare against
        ('postern ab obfs4 plugin:obfs4'). See docs/transports.md.

        Examples:
          postern transport plugin add obfs4 /usr/bin/obfs4proxy
          postern transport plugin add --replace-builtin snowflake /usr/bin/snowflake-client
          postern transport plugin add meek_lite,obfs3 /usr/bin/obfs4proxy -- -enableLogging
          postern transport plugin list --json
          postern transport plugin remove meek_lite
        """,
        options: [.flag("json", "print the plugins as JSON")],
        subcommands: [.transportPluginAdd, .transportPluginList, .transportPluginRemove],
        run: { invocation in try listPlugins(invocation) })

    static let transportPluginAdd = Command(
        name: "add",
        summary: "Add an external transport for one or more transport names",
        synopsis: "NAME[,NAME...] PATH [-- ARGS...]",
        details: """
        NAME is the transport name in bridge lines (obfs4, snowflake, meek_lite, ...); several names
        served by one program are separated by commas. PATH is the program's absolute path; it must
        exist and be executable. ARGS are passed to it as they are; put '--' before them when one
        starts with '-'. Adding again for the same names replaces the plugin.

        Examples:
          postern transport plugin add obfs4 /usr/bin/obfs4proxy
          postern transport plugin add --replace-builtin obfs4 /usr/bin/obfs4proxy
          postern transport plugin add snowflake /usr/bin/snowflake-client -- -log /tmp/sf.log
        """,
        options: [
            .flag("replace-builtin", "use the plugin instead of Postern's own transport of the same name (obfs4, snowflake)"),
            .flag("json", "print the stored plugin as JSON"),
        ],
        run: { invocation in
            let positionals = try invocation.requirePositionals("NAME[,NAME...] and PATH")
            guard positionals.count >= 2 else {
                throw invocation.usageError("add takes NAME[,NAME...] PATH [ARGS...], e.g. 'obfs4 /usr/bin/obfs4proxy'")
            }
            let plugin: TransportPlugin
            do throws(BridgeConfigError) {
                plugin = try TransportPlugin(names: try TransportPlugin.names(parsing: positionals[0]), executable: positionals[1],
                                             arguments: Array(positionals.dropFirst(2)),
                                             replacesBuiltin: invocation.arguments.flag("replace-builtin"))
            } catch {
                throw invocation.usageError(error.message)
            }
            if let problem = plugin.replacementProblem {
                throw invocation.usageError(problem)
            }
            try TransportPlugin.checkExecutable(plugin.executable)
            try invocation.bridgeStore().update { try $0.addPlugin(plugin) }
            try invocation.render(PluginListing(plugin), text: plugin.storedText)
            return 0
        })

    static let transportPluginList = Command(
        name: "list",
        summary: "List the external transports",
        details: "Example: 'postern transport plugin list --json'.",
        options: [.flag("json", "print the plugins as JSON")],
        run: { invocation in try listPlugins(invocation) })

    static let transportPluginRemove = Command(
        name: "remove",
        summary: "Remove the plugin that serves a transport name (with all its names)",
        synopsis: "NAME",
        details: "Example: 'postern transport plugin remove obfs4'.",
        run: { invocation in
            let positionals = try invocation.requirePositionals("a transport NAME")
            guard positionals.count == 1 else { throw invocation.usageError("remove takes one NAME, got \(positionals.count)") }
            guard let name = try? TransportName(matching: positionals[0]) else {
                throw invocation.usageError("'\(positionals[0].prefix(64))' is not a transport name")
            }
            let removed = try invocation.bridgeStore().update { try $0.removePlugin(serving: name) }
            invocation.output.print(removed.removedText)
            return 0
        })

    private static func listPlugins(_ invocation: Invocation) throws -> Int32 {
        try invocation.requireNoPositionals()
        let plugins = try invocation.bridgeStore().load().plugins
        try invocation.render(plugins.map(PluginListing.init), text: PluginListing.text(plugins))
        return 0
    }
}
