import BridgeConfig
import PosternSystem

/// An external transport as `postern transport plugin list --json` shows it, with the routes it is
/// used for by Postern's own transports (``Transports/builtinNames``).
package struct PluginListing: Encodable, Hashable, Sendable {
    package let names: [String]
    package let path: String
    package let arguments: [String]
    package let replacesBuiltin: Bool
    /// The routes the plugin is used for: the name itself, or `plugin:NAME` where Postern keeps its own.
    package let routes: [String]

    /// `plugin` with the routes it serves in this build (``Transports/builtinNames``).
    package init(_ plugin: TransportPlugin) {
        names = plugin.names.map(\.rawValue)
        path = plugin.executable
        arguments = plugin.arguments
        replacesBuiltin = plugin.replacesBuiltin
        routes = plugin.routes(builtinNames: Transports.builtinNames)
    }

    /// The plugins as a table (NAMES, USED FOR, COMMAND quoted for a shell), or a hint when there
    /// is none.
    package static func text(_ plugins: [TransportPlugin]) -> String {
        guard !plugins.isEmpty else { return "no plugins (add one with 'postern transport plugin add obfs4 /usr/bin/obfs4proxy')" }
        return PlainText.table(header: ["NAMES", "USED FOR", "COMMAND"], rows: plugins.map { plugin in
            [plugin.names.map(\.rawValue).joined(separator: ","), plugin.routes(builtinNames: Transports.builtinNames).joined(separator: ","),
             ([plugin.executable] + plugin.arguments).map(TransportPlugin.shellQuoted).joined(separator: " ")]
        })
    }
}

extension TransportPlugin {
    /// Why `replacesBuiltin` makes no sense for this plugin: none of its names is one Postern
    /// implements itself. Nil when it serves one, or does not replace.
    package var replacementProblem: String? {
        let builtins = Transports.builtinNames
        guard replacesBuiltin, !names.contains(where: { builtins.contains($0.rawValue) }) else { return nil }
        return "--replace-builtin is for a name Postern implements itself (\(builtins.joined(separator: ", "))); \(names.map(\.rawValue).joined(separator: ",")) is none"
    }

    /// What storing the plugin means, a line per fact: that it is stored, and for each of its names
    /// Postern implements itself whether the plugin replaces Postern's own transport or is used
    /// only where asked for.
    package var storedText: String {
        var lines = ["stored the plugin \(names.map(\.rawValue).joined(separator: ",")): \(executable)"]
        for name in names where Transports.builtinNames.contains(name.rawValue) {
            lines.append(replacesBuiltin
                ? "\(name): the plugin replaces Postern's own \(name) everywhere"
                : "\(name): Postern keeps using its own \(name); the plugin is used where asked for ('postern ab \(name) plugin:\(name)'); add it with --replace-builtin to use it everywhere")
        }
        return lines.joined(separator: "\n")
    }

    /// "removed the plugin NAMES: PATH".
    package var removedText: String {
        "removed the plugin \(names.map(\.rawValue).joined(separator: ",")): \(executable)"
    }
}
