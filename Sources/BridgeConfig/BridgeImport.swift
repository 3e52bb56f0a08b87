import PosternLinkSpec

/// A paste stored leniently (`postern bridges add` and `import`, or an app's "paste bridges" box):
/// the good lines are stored, and every line is reported (stored, already stored, rejected with
/// line, word and reason), with the paste's warnings, notes and plugin offers.
///
/// The report is data: the CLI prints ``Report/items``' ``Item/text`` and the ``Report/summary``
/// (or the report as JSON); an app shows the same. Nothing here prints.
public enum BridgeImport {
    public struct Options: Hashable, Sendable {
        /// Check and report every line without storing anything.
        public var dryRun = false
        /// Store nothing if any line is rejected or cannot be stored.
        public var allOrNothing = false
        /// Also store the paste's `ClientTransportPlugin NAME exec PATH` lines as plugins
        /// (never with `dryRun`).
        public var acceptPlugins = false
        public var policy: LoggingPolicy = .safe

        public init(dryRun: Bool = false, allOrNothing: Bool = false, acceptPlugins: Bool = false, policy: LoggingPolicy = .safe) {
            self.dryRun = dryRun
            self.allOrNothing = allOrNothing
            self.acceptPlugins = acceptPlugins
            self.policy = policy
        }
    }

    /// One entry of the report, in input order.
    public struct Item: Encodable, Hashable, Sendable {
        public enum Status: String, Encodable, Hashable, Sendable {
            case stored, updated, alreadyStored = "already-stored", wouldStore = "would-store",
                 wouldUpdate = "would-update", rejected, notStored = "not-stored", warning, note,
                 pluginOffered = "plugin-offered", pluginStored = "plugin-stored", pluginNotStored = "plugin-not-stored"
        }
        public let line: Int?
        public let entry: Int?
        public let status: Status
        public let id: String?
        public let transport: String?
        /// The bridge line, scrubbed unless the policy is unsafe.
        public let bridge: String?
        public let code: String?
        public let word: Int?
        public let message: String?
        /// For a plugin line: the command that stores it.
        public let command: String?

        init(location: PasteLocation?, status: Status, id: BridgeID? = nil, line bridgeLine: BridgeLine? = nil,
             policy: LoggingPolicy, code: BridgeConfigError.Code? = nil, word: Int? = nil, message: String? = nil,
             command: String? = nil, plugin: String? = nil) {
            self.line = location?.line
            self.entry = location?.entry
            self.status = status
            self.id = id?.rawValue
            self.transport = plugin ?? bridgeLine?.transport.description(policy: policy)
            self.bridge = bridgeLine?.description(policy: policy)
            self.code = code?.rawValue
            self.word = word
            self.message = message.map { Self.withoutLocation($0, location) }
            self.command = command
        }

        /// BridgePaste puts "line 4: " in front of its messages; the report prints the location once.
        private static func withoutLocation(_ message: String, _ location: PasteLocation?) -> String {
            guard let location else { return message }
            let prefix = "\(location): "
            return message.hasPrefix(prefix) ? String(message.dropFirst(prefix.count)) : message
        }

        public var locationText: String {
            guard let line else { return "input" }
            return entry.map { "entry \($0)" } ?? "line \(line)"
        }

        /// The entry as a sentence for people ("line 2: stored as 1a2b3c: obfs4 [scrubbed] ...").
        public var text: String {
            let shownBridge = bridge.map { ": \($0)" } ?? ""
            switch status {
            case .stored: return "\(locationText): stored as \(id ?? "?")\(shownBridge)"
            case .updated: return "\(locationText): updated \(id ?? "?") (same bridge, new arguments; ID and on/off state kept)\(shownBridge)"
            case .alreadyStored: return "\(locationText): already stored as \(id ?? "?")"
            case .wouldStore: return "\(locationText): would be stored\(shownBridge)"
            case .wouldUpdate: return "\(locationText): would update \(id ?? "?") (same bridge, new arguments)\(shownBridge)"
            case .rejected: return "\(locationText): rejected: \(message ?? "")"
            case .notStored: return "\(locationText): not stored: \(message ?? "")"
            case .warning: return "\(locationText): warning: \(message ?? "")"
            case .note: return "\(locationText): note: \(message ?? "")"
            case .pluginOffered:
                return "\(locationText): plugin \(transport ?? "?") not stored (never silently); to use it, run: \(command ?? "")  (or repeat with --accept-plugins)"
            case .pluginStored: return "\(locationText): stored the plugin \(transport ?? "?") (\(message ?? ""))"
            case .pluginNotStored: return "\(locationText): plugin \(transport ?? "?") not stored: \(message ?? "")"
            }
        }

        /// Input order; within a line: the outcome first, then warnings and notes.
        var sortKey: (Int, Int, Int) {
            let rank: Int
            switch status {
            case .warning: rank = 1
            case .note: rank = 2
            default: rank = 0
            }
            return (line ?? 0, entry ?? 0, rank)
        }
    }

    public struct Counts: Encodable, Hashable, Sendable {
        public var stored = 0, updated = 0, alreadyStored = 0, rejected = 0
        /// Valid lines that could not be stored (the list is full).
        public var notStored = 0
        /// Valid lines held back because of `allOrNothing`.
        public var heldBack = 0
        /// `ClientTransportPlugin ... exec` lines: offered (not stored) and stored (`acceptPlugins`).
        public var pluginsOffered = 0, pluginsStored = 0
    }

    public struct Report: Encodable, Hashable, Sendable {
        /// For messages: "the arguments", "standard input" or a file path.
        public let source: String
        public let dryRun: Bool
        public let allOrNothing: Bool
        /// Whether the store was changed.
        public let changed: Bool
        /// Whether bridge lines are shown scrubbed (the policy is safe).
        public let scrubbed: Bool
        public let counts: Counts
        public let items: [Item]
        public let summary: String
        /// The paste held no bridge line and no plugin line at all.
        public let foundNothing: Bool

        /// Nothing found, or a line was rejected or could not be stored (the CLI exits 1).
        public var failed: Bool { foundNothing || counts.rejected > 0 || counts.notStored > 0 }

        private enum CodingKeys: String, CodingKey {
            case source, dryRun, allOrNothing, changed, scrubbed, counts, items, summary
        }
    }

    private enum Outcome {
        case added(BridgeID), updated(BridgeID), unchanged(BridgeID), failed(BridgeConfigError)
    }

    private struct AllOrNothingAbort: Error {}

    /// Parses `text` as a paste (``BridgePaste``) and stores what it may in `store`, under one lock.
    /// Throws only when the store cannot be read or written.
    public static func run(_ text: String, source: String, into store: BridgeStore, options: Options) throws -> Report {
        let policy = options.policy
        let dryRun = options.dryRun
        let allOrNothing = options.allOrNothing
        let paste = BridgePaste.parse(text, rules: store.rules, logging: policy)
        let acceptPlugins = options.acceptPlugins && !dryRun
        var pluginOutcomes: [BridgeConfigError?] = []
        func applyPlugins(to configuration: inout BridgeConfiguration) {
            guard acceptPlugins else { return }
            pluginOutcomes = paste.pluginOffers.map { offer -> BridgeConfigError? in
                do throws(BridgeConfigError) {
                    try TransportPlugin.checkExecutable(offer.plugin.executable)
                    try configuration.addPlugin(offer.plugin)
                    return nil
                } catch {
                    return error
                }
            }
        }

        var outcomes: [Outcome] = []
        var aborted = false
        func apply(to configuration: inout BridgeConfiguration) {
            outcomes = paste.accepted.map { accepted -> Outcome in
                do throws(BridgeConfigError) {
                    let result = try configuration.add(accepted.line)
                    switch result.change {
                    case .added: return .added(result.id)
                    case .updated: return .updated(result.id)
                    case .unchanged: return .unchanged(result.id)
                    }
                } catch {
                    return .failed(error)
                }
            }
        }
        if paste.accepted.isEmpty {
            if acceptPlugins && !paste.pluginOffers.isEmpty { try store.update { applyPlugins(to: &$0) } }
        } else if dryRun {
            var configuration = try store.load()
            apply(to: &configuration)
        } else if allOrNothing && !paste.rejected.isEmpty {
            aborted = true
        } else {
            do {
                try store.update { configuration in
                    apply(to: &configuration)
                    applyPlugins(to: &configuration)
                    if allOrNothing, outcomes.contains(where: { if case .failed = $0 { true } else { false } }) {
                        throw AllOrNothingAbort()
                    }
                }
            } catch is AllOrNothingAbort {
                aborted = true
            }
        }

        var items: [Item] = []
        var counts = Counts()
        for (index, accepted) in paste.accepted.enumerated() {
            let location = accepted.location
            let line = accepted.line
            guard index < outcomes.count else {
                items.append(Item(location: location, status: .notStored, line: line, policy: policy,
                                  message: "another line was rejected and --all-or-nothing was given"))
                counts.heldBack += 1
                continue
            }
            switch outcomes[index] {
            case .failed(let error):
                items.append(Item(location: location, status: .notStored, policy: policy, code: error.code, message: error.message))
                counts.notStored += 1
            case _ where aborted:
                items.append(Item(location: location, status: .notStored, line: line, policy: policy,
                                  message: "another line could not be stored and --all-or-nothing was given"))
                counts.heldBack += 1
            case .added(let id):
                items.append(dryRun ? Item(location: location, status: .wouldStore, line: line, policy: policy)
                                    : Item(location: location, status: .stored, id: id, line: line, policy: policy))
                counts.stored += 1
            case .updated(let id):
                items.append(Item(location: location, status: dryRun ? .wouldUpdate : .updated, id: id, line: line, policy: policy))
                counts.updated += 1
            case .unchanged(let id):
                items.append(Item(location: location, status: .alreadyStored, id: id, policy: policy))
                counts.alreadyStored += 1
            }
        }
        for error in paste.rejected {
            items.append(Item(location: error.location, status: .rejected, policy: policy, code: error.code,
                              word: error.word, message: error.message))
            counts.rejected += 1
        }
        for warning in paste.warnings {
            items.append(Item(location: warning.location, status: .warning, policy: policy, code: warning.code, message: warning.message))
        }
        for note in paste.notes {
            items.append(Item(location: note.location, status: .note, policy: policy, code: note.code, message: note.message))
        }
        for (index, offer) in paste.pluginOffers.enumerated() {
            let names = offer.plugin.names.map(\.rawValue).joined(separator: ",")
            if acceptPlugins && !aborted, index < pluginOutcomes.count {
                if let error = pluginOutcomes[index] {
                    items.append(Item(location: offer.location, status: .pluginNotStored, policy: policy, code: error.code,
                                      message: error.message, plugin: names))
                    counts.notStored += 1
                } else {
                    items.append(Item(location: offer.location, status: .pluginStored, policy: policy,
                                      message: offer.plugin.executable, command: offer.plugin.addCommand, plugin: names))
                    counts.pluginsStored += 1
                }
            } else {
                items.append(Item(location: offer.location, status: .pluginOffered, policy: policy, code: .pluginOffered,
                                  command: offer.plugin.addCommand, plugin: names))
                counts.pluginsOffered += 1
            }
        }
        items.sort { $0.sortKey < $1.sortKey }

        let changed = !dryRun && !aborted && (counts.stored + counts.updated + counts.pluginsStored) > 0
        let foundNothing = paste.isEmpty && paste.pluginOffers.isEmpty
        var summary = summaryLine(counts: counts, source: source, dryRun: dryRun, aborted: aborted, foundNothing: foundNothing)
        if counts.pluginsStored > 0 { summary += "; stored \(plural(counts.pluginsStored, "plugin"))" }
        if counts.pluginsOffered > 0 { summary += "; \(plural(counts.pluginsOffered, "plugin")) offered, not stored" }
        return Report(source: source, dryRun: dryRun, allOrNothing: allOrNothing, changed: changed, scrubbed: !policy.unsafeLogging,
                      counts: counts, items: items, summary: summary, foundNothing: foundNothing)
    }

    private static func summaryLine(counts: Counts, source: String, dryRun: Bool, aborted: Bool, foundNothing: Bool) -> String {
        if foundNothing { return "no bridge lines found in \(source); nothing stored" }
        if counts.stored + counts.updated + counts.alreadyStored + counts.rejected + counts.notStored + counts.heldBack == 0 {
            return "no bridge lines found in \(source)"
        }
        var parts: [String] = []
        if aborted {
            parts.append("stored nothing (--all-or-nothing)")
        } else if dryRun {
            parts.append("dry run, nothing stored: \(plural(counts.stored, "bridge")) would be stored")
            if counts.updated > 0 { parts.append("\(counts.updated) would be updated") }
        } else {
            parts.append("stored \(plural(counts.stored, "bridge"))")
            if counts.updated > 0 { parts.append("updated \(counts.updated)") }
        }
        if counts.alreadyStored > 0 { parts.append("\(counts.alreadyStored) already stored") }
        if counts.rejected > 0 { parts.append("\(plural(counts.rejected, "line")) rejected") }
        if counts.notStored > 0 { parts.append("\(plural(counts.notStored, "line")) could not be stored") }
        return parts.joined(separator: "; ")
    }

    private static func plural(_ count: Int, _ singular: String) -> String {
        "\(count) \(count == 1 ? singular : singular + "s")"
    }
}
