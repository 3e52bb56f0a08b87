import BridgeConfig
import BridgeQR
import Foundation
import PosternLinkSpec
import PosternRuntime

extension Command {
    static let bridges = Command(
        name: "bridges",
        summary: "Add, list, switch on and off, import and export bridges",
        details: """
        Bridges are kept in bridges.json in the settings directory (mode 0600, written atomically).
        Listings show IDs, transport, on/off state and the line with its address, fingerprint and
        cert replaced by [scrubbed]; --unsafe-logging shows full lines.
        """,
        subcommands: [.bridgesAdd, .bridgesImport, .bridgesList, .bridgesRemove, .bridgesEnable, .bridgesDisable,
                      .bridgesExport, .bridgesBuiltin, .bridgesTest])

    static let pasteOptions: [OptionSpec] = [
        .flag("dry-run", "check and report every line without storing anything"),
        .flag("all-or-nothing", "store nothing if any line is rejected (exit 1)"),
        .flag("json", "print the report as JSON"),
        .flag("accept-plugins", "also store the paste's 'ClientTransportPlugin NAME exec PATH' lines as plugins"),
    ]

    static let pasteDetails = """
    Accepts what people paste: lines with or without 'Bridge', comments (#, //), blank lines, quotes,
    torrc fragments (UseBridges and other options are skipped with a note) and the JSON array of strings shared in QR codes. Every line is reported: stored (with its new ID),
    already stored, or rejected with its line number, word and reason. Valid lines are stored even
    when others are rejected, unless --all-or-nothing is given; the exit status is 1 if any line was
    rejected or could not be stored. A 'ClientTransportPlugin NAME exec PATH ARGS' line is an external
    transport: it is never stored silently; the report prints the 'postern transport plugin add'
    command that would store it, and --accept-plugins stores it (see 'postern transport plugin').
    """

    static let bridgesAdd = Command(
        name: "add",
        summary: "Add bridge lines from standard input, a file, or arguments",
        synopsis: "- | --file FILE | LINE...",
        details: pasteDetails + """

        Give the lines on standard input ('-') or in a file: arguments are visible to every local
        user in the process list (/proc/PID/cmdline) and stay in shell history, so a bridge given as
        an argument is stored with a warning on standard error. As arguments, give each bridge line
        as one (quoted) argument; 'line N' in the report is argument N.
        """,
        options: [.value("file", "FILE", "read the lines from FILE ('-' for standard input)")] + pasteOptions,
        run: { invocation in
            let positionals = invocation.arguments.positionals
            if let file = invocation.arguments.value("file") {
                guard positionals.isEmpty else {
                    throw invocation.usageError("give bridge lines either as arguments or with --file, not both")
                }
                let input = try InputReader.read(file, output: invocation.output)
                return try invocation.importPaste(input.text, source: input.name)
            }
            guard !positionals.isEmpty else {
                throw invocation.usageError("no bridge lines given (give LINE arguments, --file FILE, or - for standard input)")
            }
            if positionals == ["-"] {
                let input = try InputReader.read("-", output: invocation.output)
                return try invocation.importPaste(input.text, source: input.name)
            }
            if positionals.contains("-") {
                throw invocation.usageError("'-' (standard input) cannot be combined with bridge lines as arguments")
            }
            // `postern bridges add obfs4 192.0.2.1:443 ...` without quotes splits one line into words.
            if let problem = BridgeImport.splitLineProblem(in: positionals, policy: invocation.loggingPolicy) {
                throw invocation.usageError(problem)
            }
            InputReader.warnSecretOnCommandLine("a bridge line", instead: "'postern bridges add -' (standard input) or --file FILE",
                                                output: invocation.output)
            return try invocation.importPaste(positionals.joined(separator: "\n"), source: "the arguments")
        })

    static let bridgesImport = Command(
        name: "import",
        summary: "Import bridges from a file or standard input (torrc fragment, list, JSON array)",
        synopsis: "FILE | -",
        details: pasteDetails,
        options: pasteOptions,
        run: { invocation in
            let positionals = invocation.arguments.positionals
            guard positionals.count == 1 else {
                throw invocation.usageError(positionals.isEmpty ? "a FILE to import (or - for standard input) is required"
                                                                : "import takes one FILE (or -), got \(positionals.count)")
            }
            let input = try InputReader.read(positionals[0], output: invocation.output)
            return try invocation.importPaste(input.text, source: input.name)
        })

    static let bridgesList = Command(
        name: "list",
        summary: "List stored bridges (scrubbed unless --unsafe-logging)",
        options: [.flag("json", "print the list as JSON")],
        run: { invocation in
            try invocation.requireNoPositionals()
            let listing = StoredBridgesListing(try invocation.bridgeStore().load(), policy: invocation.loggingPolicy)
            try invocation.render(listing, text: listing.text)
            return 0
        })

    static let bridgesRemove = Command(
        name: "remove",
        summary: "Remove bridges by ID",
        synopsis: "ID...",
        details: "If any ID is unknown, nothing is removed (exit 1).",
        run: { invocation in
            try changeBridges(invocation) { (configuration: inout BridgeConfiguration, ids: [BridgeID]) throws(BridgeConfigError) in
                try configuration.remove(ids, policy: invocation.loggingPolicy)
            }
        })

    static let bridgesEnable = Command(
        name: "enable",
        summary: "Switch bridges on by ID",
        synopsis: "ID...",
        details: "If any ID is unknown, nothing is changed (exit 1).",
        run: { invocation in try setEnabled(true, invocation) })

    static let bridgesDisable = Command(
        name: "disable",
        summary: "Switch bridges off by ID (they stay stored)",
        synopsis: "ID...",
        details: "If any ID is unknown, nothing is changed (exit 1).",
        run: { invocation in try setEnabled(false, invocation) })

    private static func setEnabled(_ enabled: Bool, _ invocation: Invocation) throws -> Int32 {
        try changeBridges(invocation) { (configuration: inout BridgeConfiguration, ids: [BridgeID]) throws(BridgeConfigError) in
            try configuration.setEnabled(enabled, for: ids, policy: invocation.loggingPolicy)
        }
    }

    /// Applies `change` to the IDs under one lock; an unknown ID aborts the whole change.
    private static func changeBridges(_ invocation: Invocation,
                                      _ change: (inout BridgeConfiguration, [BridgeID]) throws(BridgeConfigError) -> [String]) throws -> Int32 {
        let ids = try invocation.bridgeIDs()
        let store = try invocation.bridgeStore()
        let messages: [String]
        do {
            messages = try store.update { configuration in try change(&configuration, ids) }
        } catch let error as BridgeConfigError where error.code == .unknownBridgeID {
            throw CommandFailure("\(error.message); nothing was changed (see 'postern bridges list')")
        }
        invocation.output.print(messages.joined(separator: "\n"))
        return 0
    }

    static let bridgesExport = Command(
        name: "export",
        summary: "Print stored bridge lines in full, as a torrc fragment, a JSON array or a QR code",
        synopsis: "[ID...] [--format torrc|json|qr]",
        details: """
        Unlike every other command, export prints bridge addresses, fingerprints and certs in the
        clear: that is its purpose. Anyone who sees them can use or block your bridges; share them
        only with people you trust. Without IDs, all stored bridges are exported.
        torrc: 'UseBridges 1' and one 'Bridge ...' line per bridge. json: an array of lines, the form
        bridges.torproject.org puts in QR codes. qr: that array as a QR code drawn in the terminal
        (light on dark, like 'qrencode -t UTF8'). torrc and json can be read back with
        'postern bridges import'.
        """,
        options: [
            .value("format", "FORMAT", "torrc (default), json or qr"),
            .flag("enabled-only", "export only bridges that are switched on"),
        ],
        run: { invocation in
            let format: BridgeExportFormat
            do throws(BridgeConfigError) {
                format = try BridgeExportFormat(validating: invocation.arguments.value("format") ?? "torrc")
            } catch {
                throw invocation.usageError(error.message)
            }
            let ids = invocation.arguments.positionals.isEmpty ? [] : try invocation.bridgeIDs()
            let configuration = try invocation.bridgeStore().load()
            let lines = try configuration.bridgesToExport(ids: ids, enabledOnly: invocation.arguments.flag("enabled-only")).map(\.line)
            switch format {
            case .json:
                try invocation.output.json(lines.map(\.description))
            case .qr:
                invocation.output.print(try QRCode.exportText(bridgeLines: lines))
            default:
                invocation.output.print(BridgeLine.torrcFragment(lines))
            }
            return 0
        })

    static let bridgesBuiltin = Command(
        name: "builtin",
        summary: "List Tor Browser's built-in bridges shipped with Postern",
        synopsis: "[--transport NAME]",
        details: """
        Built-in bridges are public and often blocked. Postern uses them for a transport only when
        you have no enabled bridge of your own for it. Scrubbed unless --unsafe-logging.
        """,
        options: [
            .value("transport", "NAME", "only this transport (obfs4, snowflake, meek_lite, ...)"),
            .flag("json", "print the list as JSON"),
        ],
        run: { invocation in
            try invocation.requireNoPositionals()
            var transport: TransportName?
            if let name = invocation.arguments.value("transport") {
                do throws(BridgeLineError) {
                    transport = try TransportName(matching: name)
                } catch {
                    throw invocation.usageError("--transport: \(error.message)")
                }
            }
            let builtins = try BuiltinBridges.bundled(rules: Transports.argumentRules)
            let listing = try builtins.listing(transport: transport, policy: invocation.loggingPolicy)
            try invocation.render(listing, text: listing.text)
            return 0
        })
}

extension Invocation {
    /// `bridges add` and `bridges import`: the library's ``BridgeImport`` on the paste, rendered.
    func importPaste(_ text: String, source: String) throws -> Int32 {
        let options = BridgeImport.Options(dryRun: arguments.flag("dry-run"), allOrNothing: arguments.flag("all-or-nothing"),
                                           acceptPlugins: arguments.flag("accept-plugins"), policy: loggingPolicy)
        let report = try BridgeImport.run(text, source: source, into: try bridgeStore(), options: options)
        try render(report, text: (report.items.map(\.text) + [report.summary]).joined(separator: "\n"))
        return report.failed ? 1 : 0
    }
}
