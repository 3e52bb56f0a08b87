import PosternRuntime
import Foundation
import ConnectionAssist
import PosternTor

extension Command {
    static let transportLimits = Command(
        name: "limits",
        summary: "Show or change how long connection assist (auto) gives each route",
        details: """
        Each route gets a ceiling (the longest one attempt may take) and a no-progress window (how
        long bootstrap may stay at one percentage); after either, auto moves on to the next route.
        KIND is direct or a transport name (vanilla, obfs4, snowflake, ...). Stored in
        connection-assist.json in the settings directory; 'postern run --route-timeout' overrides
        them for one run.
        """,
        options: [.flag("json", "print the limits as JSON")],
        subcommands: [.transportLimitsSet, .transportLimitsReset],
        run: { invocation in
            try invocation.requireNoPositionals()
            let table = try invocation.assistLimits()
            try invocation.render(table.listing, text: table.textTable)
            return 0
        })

    static let transportLimitsSet = Command(
        name: "set",
        summary: "Set a route kind's ceiling and no-progress window in seconds",
        synopsis: "KIND CEILING/WINDOW",
        details: "Example: 'postern transport limits set direct 20/15'.",
        run: { invocation in
            let positionals = try invocation.requirePositionals("KIND and CEILING/WINDOW")
            guard positionals.count == 2 else {
                throw invocation.usageError("set takes KIND and CEILING/WINDOW, e.g. 'direct 20/15'")
            }
            let kind: String
            let limits: RouteLimits
            do throws(TorCoreError) {
                kind = try RouteLimitTable.kind(validating: positionals[0])
                limits = try RouteLimits(parsing: positionals[1])
            } catch {
                throw invocation.usageError(error.message)
            }
            try invocation.updateAssistLimits { $0.set(limits, forKind: kind) }
            invocation.output.print("\(kind): \(limits.summary)")
            return 0
        })

    static let transportLimitsReset = Command(
        name: "reset",
        summary: "Return route kinds (or all, without KIND) to the defaults",
        synopsis: "[KIND...]",
        run: { invocation in
            var kinds: [String] = []
            for text in invocation.arguments.positionals {
                do throws(TorCoreError) {
                    kinds.append(try RouteLimitTable.kind(validating: text))
                } catch {
                    throw invocation.usageError(error.message)
                }
            }
            try invocation.updateAssistLimits { $0.resetToDefaults(kinds) }
            invocation.output.print(kinds.isEmpty ? "all route limits are the defaults" : "back to the defaults: \(kinds.joined(separator: ", "))")
            return 0
        })
}

extension Invocation {
    func assistLimits() throws -> RouteLimitTable {
        do { return try AssistFiles.readLimits(in: paths.configDirectory) } catch { throw CommandFailure(error.message) }
    }

    /// Changes the stored limits under the store's lock.
    func updateAssistLimits(_ change: (inout RouteLimitTable) -> Void) throws {
        do { try AssistFiles.updateLimits(in: paths.configDirectory, change) } catch { throw CommandFailure(error.message) }
    }
}
