import Foundation
import PosternLinkSpec
import PosternSystem

/// An external pluggable transport: a pt-spec managed client (such as Debian's `obfs4proxy` or
/// `snowflake-client`) that Postern starts and talks to over SOCKS, for the transports it names.
///
/// Validated on construction, so a stored plugin is always runnable in form: one to eight distinct
/// transport names (never `vanilla`), an absolute executable path and at most 32 arguments, none of
/// them containing a control character (`PlainText.isControlCharacter`: C0, DEL, C1, bidirectional
/// formatting). A path or argument can come from a paste, and both are shown to the user (in the
/// command that stores a pasted plugin, in `transport plugin list`), so an escape sequence or a
/// reordering mark would reach the terminal. Whether the file exists and is executable is checked when
/// the plugin is added and again when it is started, since it can change in between.
///
/// `replacesBuiltin` records the user's explicit wish that the plugin serve a name Postern also
/// implements itself (`obfs4`, `snowflake`). Without it, such a name keeps Postern's own transport
/// for `run`, connection assist and health checks, and the plugin is used only where it is asked
/// for by name (`postern ab plugin:obfs4`).
public struct TransportPlugin: Hashable, Sendable {
    public static let maximumNames = 8
    public static let maximumArguments = 32
    public static let maximumArgumentBytes = 1024
    public static let maximumPathBytes = 4096

    public let names: [TransportName]
    public let executable: String
    public let arguments: [String]
    public let replacesBuiltin: Bool

    public init(names: [TransportName], executable: String, arguments: [String] = [],
                replacesBuiltin: Bool = false) throws(BridgeConfigError) {
        guard !names.isEmpty, names.count <= Self.maximumNames else {
            throw Self.invalid(.badPluginName, "a plugin serves one to \(Self.maximumNames) transport names")
        }
        guard Set(names).count == names.count else { throw Self.invalid(.badPluginName, "a transport name is given twice") }
        guard !names.contains(.vanilla) else {
            throw Self.invalid(.badPluginName, "vanilla means plain bridges without a transport; it cannot be a plugin")
        }
        guard executable.hasPrefix("/") else {
            throw Self.invalid(.badPluginPath, "the plugin's executable must be an absolute path (starting with /)")
        }
        guard executable.utf8.count <= Self.maximumPathBytes, Self.isClean(executable) else {
            throw Self.invalid(.badPluginPath, "the plugin's path is longer than \(Self.maximumPathBytes) bytes or contains a control character")
        }
        guard arguments.count <= Self.maximumArguments else {
            throw Self.invalid(.badPluginArgument, "a plugin takes at most \(Self.maximumArguments) arguments")
        }
        for (offset, argument) in arguments.enumerated() {
            guard argument.utf8.count <= Self.maximumArgumentBytes, Self.isClean(argument) else {
                throw Self.invalid(.badPluginArgument,
                                   "plugin argument \(offset + 1) is longer than \(Self.maximumArgumentBytes) bytes or contains a control character")
            }
        }
        self.names = names
        self.executable = executable
        self.arguments = arguments
        self.replacesBuiltin = replacesBuiltin
    }

    /// Parses `obfs4` or `obfs4,meek_lite` (well-known names matched ignoring case, as elsewhere).
    public static func names(parsing text: String) throws(BridgeConfigError) -> [TransportName] {
        var names: [TransportName] = []
        for (position, part) in text.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            let word = String(part)
            // The word is not repeated: from a paste it may be anything, a cert included (found by
            // BridgeParserFuzzer in the CI run).
            guard let name = try? TransportName(matching: word) else {
                throw invalid(.badPluginName, "plugin name \(position + 1) is not a transport name (letters, digits and _, not starting with a digit)")
            }
            names.append(name)
        }
        return names
    }

    /// The same plugin with `replacesBuiltin` set: what an A/B trial of `plugin:NAME` runs with.
    public func replacingBuiltins() -> TransportPlugin {
        TransportPlugin(trusted: names, executable, arguments, true)
    }

    private init(trusted names: [TransportName], _ executable: String, _ arguments: [String], _ replacesBuiltin: Bool) {
        self.names = names
        self.executable = executable
        self.arguments = arguments
        self.replacesBuiltin = replacesBuiltin
    }

    /// The command that adds this plugin, quoted for a POSIX shell, for messages that tell the
    /// user what to run (`postern transport plugin add obfs4 /usr/bin/obfs4proxy`).
    public var addCommand: String {
        var words = ["postern", "transport", "plugin", "add", names.map(\.rawValue).joined(separator: ","), Self.shellQuoted(executable)]
        if replacesBuiltin { words.insert("--replace-builtin", at: 4) }
        if !arguments.isEmpty { words += ["--"] + arguments.map(Self.shellQuoted) }
        return words.joined(separator: " ")
    }

    /// `word` as one word for a POSIX shell: as it is when that is safe, else in single quotes.
    public static func shellQuoted(_ word: String) -> String {
        let plain = word.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || [UInt8(ascii: "/"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "="),
                    UInt8(ascii: ","), UInt8(ascii: ":"), UInt8(ascii: "+"), UInt8(ascii: "@")].contains(byte)
        }
        if plain && !word.isEmpty { return word }
        return "'" + word.replacingAll("'", with: "'\\''") + "'"
    }

    /// Checks that `path` names an existing regular file this user may execute: done when a plugin
    /// is added (the launcher checks again when it starts it, since the file can change in between).
    public static func checkExecutable(_ path: String) throws(BridgeConfigError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw BridgeConfigError(code: .badPluginPath, kind: .conflict,
                                    message: "the plugin \(path) cannot be used: \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw BridgeConfigError(code: .badPluginPath, kind: .conflict, message: "the plugin \(path) is not a regular file")
        }
        guard access(path, X_OK) == 0 else {
            throw BridgeConfigError(code: .badPluginPath, kind: .conflict, message: "the plugin \(path) is not executable")
        }
    }

    /// The routes this plugin is used for: a name itself, or `plugin:NAME` where Postern keeps its
    /// own transport of that name (one of `builtinNames`) because the plugin does not replace it.
    public func routes(builtinNames: [String]) -> [String] {
        names.map { name in builtinNames.contains(name.rawValue) && !replacesBuiltin ? "plugin:\(name)" : name.rawValue }
    }

    private static func isClean(_ text: String) -> Bool {
        !PlainText.containsControlCharacters(text)
    }

    private static func invalid(_ code: BridgeConfigError.Code, _ message: String) -> BridgeConfigError {
        BridgeConfigError(code: code, kind: .invalidInput, message: message)
    }
}

extension BridgeConfiguration {
    /// The most plugins one user can keep.
    public static let maximumPlugins = 16

    /// Adds a plugin. A name already served by another plugin is a conflict: remove that one first.
    public mutating func addPlugin(_ plugin: TransportPlugin) throws(BridgeConfigError) {
        if let index = plugins.firstIndex(where: { $0.names == plugin.names }) {
            plugins[index] = plugin
            return
        }
        for name in plugin.names {
            if let other = plugins.first(where: { $0.names.contains(name) }) {
                throw BridgeConfigError(code: .pluginConflict, kind: .conflict,
                                        message: "the transport \(name) is already served by the plugin \(other.executable) (remove it first with 'postern transport plugin remove \(name)')")
            }
        }
        guard plugins.count < Self.maximumPlugins else {
            throw BridgeConfigError(code: .tooManyPlugins, kind: .limit, message: "you can add up to \(Self.maximumPlugins) plugins")
        }
        plugins.append(plugin)
    }

    /// Removes the plugin that serves `name` (with all its names) and returns it.
    @discardableResult
    public mutating func removePlugin(serving name: TransportName) throws(BridgeConfigError) -> TransportPlugin {
        guard let index = plugins.firstIndex(where: { $0.names.contains(name) }) else {
            throw BridgeConfigError(code: .unknownPlugin, kind: .conflict, message: "no plugin serves the transport \(name)")
        }
        return plugins.remove(at: index)
    }

    /// The plugin that serves `name`, if any.
    public func plugin(serving name: TransportName) -> TransportPlugin? {
        plugins.first { $0.names.contains(name) }
    }
}

extension BridgeConfigError.Code {
    public static let badPluginName = Self("bad-plugin-name")
    public static let badPluginPath = Self("bad-plugin-path")
    public static let badPluginArgument = Self("bad-plugin-argument")
    public static let pluginConflict = Self("plugin-conflict")
    public static let tooManyPlugins = Self("too-many-plugins")
    public static let unknownPlugin = Self("unknown-plugin")
    public static let pluginOffered = Self("plugin-offered")
}
