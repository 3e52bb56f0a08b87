import BridgeConfig
import Foundation
import PosternLinkSpec
import PosternSystem

extension TrialError.Code {
    /// A route has no bridges to try: none stored and enabled, and no built-in ones.
    public static let noBridges = Self("no-bridges")
}

/// Turning route names (`direct`, `obfs4`, `plugin:obfs4`, ...) into the routes of a plan, before
/// any child starts: what `postern ab ROUTE...` does with its arguments.
extension TrialRoute {
    /// Seconds a trial of a route kind may take by default; others get ``fallbackTimeout``.
    public static let defaultTimeouts: [String: Double] = ["direct": 45, "snowflake": 300]
    public static let fallbackTimeout = 120.0

    /// Each route's trial timeout in seconds, by lowercased route name: `given` holds `SECONDS` (for
    /// every route) or `ROUTE=SECONDS`; the rest get the defaults (a `plugin:NAME` route NAME's).
    public static func timeouts(for routes: [String], given: [String]) throws(TrialError) -> [String: Double] {
        var timeouts: [String: Double] = [:]
        var global: Double?
        for text in given {
            let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
            guard let seconds = Double(parts.last ?? ""), seconds > 0, seconds <= Duration.longestUserWait else {
                throw TrialError(.invalidInput, kind: .usage,
                                 "--trial-timeout needs SECONDS or ROUTE=SECONDS with a positive number (at most \(Int(Duration.longestUserWait)), a week), not '\(text)'")
            }
            if parts.count == 2 {
                let route = parts[0].lowercased()
                guard routes.map({ $0.lowercased() }).contains(route) else {
                    throw TrialError(.invalidInput, kind: .usage, "--trial-timeout names '\(parts[0])', which is not one of the routes given")
                }
                timeouts[route] = seconds
            } else {
                global = seconds
            }
        }
        var result: [String: Double] = [:]
        for route in routes.map({ $0.lowercased() }) {
            let kind = route.hasPrefix("plugin:") ? String(route.dropFirst("plugin:".count)) : route
            result[route] = timeouts[route] ?? global ?? defaultTimeouts[kind] ?? fallbackTimeout
        }
        return result
    }

    /// Each name becomes a route with the bridges a child may use: the enabled stored bridges of
    /// that transport, else the built-in ones. Unknown or unavailable transports, routes given
    /// twice and routes without bridges are refused (kind `usage` for the names, `failure` for
    /// missing bridges).
    /// - Parameters:
    ///   - timeouts: from ``timeouts(for:given:)``.
    ///   - available: the transports this build can run (the registry's names; vanilla needs none).
    ///   - servingPlugin: the stored plugin that serves a name for `postern run`, if any (it serves
    ///     the trial's child too).
    public static func resolve(_ names: [String], timeouts: [String: Double], configuration: BridgeConfiguration,
                               available: [String], builtins: BuiltinBridges?,
                               servingPlugin: (String) -> TransportPlugin?) throws(TrialError) -> [TrialRoute] {
        func usage(_ message: String) -> TrialError { TrialError(.invalidInput, kind: .usage, message) }
        func bridges(_ transport: TransportName) throws(TrialError) -> [BridgeLine] {
            let selection = BridgeSelection(configuration: configuration, transports: [transport], builtins: builtins)
            guard !selection.lines.isEmpty else {
                throw TrialError(.noBridges, "there are no \(transport) bridges to try: none stored and enabled, and no built-in ones; add some with 'postern bridges add'")
            }
            return selection.lines
        }
        var routes: [TrialRoute] = []
        for name in names {
            let lower = name.lowercased()
            let timeout = Duration.clampedSeconds(timeouts[lower] ?? fallbackTimeout)
            if lower.hasPrefix("plugin:") {
                let pluginName = String(name.dropFirst("plugin:".count))
                guard let transport = TransportName.known(matching: pluginName) ?? TransportName(pluginName),
                      let plugin = configuration.plugin(serving: transport) else {
                    throw usage("'\(name)': no plugin serves \(pluginName.prefix(64)) (see 'postern transport plugin list')")
                }
                let lines = try bridges(transport)
                let routeName = "plugin:\(transport)"
                guard !routes.contains(where: { $0.name == routeName }) else { throw usage("the route \(routeName) is given twice") }
                routes.append(TrialRoute(name: routeName, bridges: lines, timeout: timeout, transport: transport.rawValue,
                                         plugins: [plugin.replacingBuiltins()]))
                continue
            }
            if lower == "direct" {
                routes.append(TrialRoute(name: "direct", bridges: [], timeout: timeout))
                continue
            }
            guard lower != "auto", let transport = TransportName.known(matching: name) ?? TransportName(name) else {
                throw usage("'\(name)' is not a route: use direct, vanilla or a transport name (\(available.joined(separator: ", ")))")
            }
            guard transport.isVanilla || available.contains(transport.rawValue) else {
                throw usage("the \(transport) transport is not available in this build (available: vanilla, \(available.joined(separator: ", ")))")
            }
            let lines = try bridges(transport)
            guard !routes.contains(where: { $0.name == transport.rawValue }) else {
                throw usage("the route \(transport) is given twice")
            }
            let plugins = servingPlugin(transport.rawValue).map { [$0] } ?? []
            routes.append(TrialRoute(name: transport.rawValue, bridges: lines, timeout: timeout, plugins: plugins))
        }
        if routes.filter({ $0.name == "direct" }).count > 1 { throw usage("the route direct is given twice") }
        return routes
    }
}

/// Where `postern ab` keeps its runs: `<state dir>/ab/<id>/`, each with its result, trials, charts
/// and report.
extension TrialHistory {
    /// The history under a state directory.
    public init(stateDirectory: URL) { self.init(directory: stateDirectory.appendingPathComponent("ab")) }

    /// A run given as a directory, or as the id of a run kept in this history.
    public func runDirectory(_ text: String) -> URL {
        let given = URL(fileURLWithPath: text)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: given.path, isDirectory: &isDirectory), isDirectory.boolValue { return given }
        return directory.appendingPathComponent(text)
    }

    /// The saved runs named by directories or ids (``runDirectory(_:)``), in the order given; the
    /// first that cannot be read throws.
    public func loadRuns(_ names: [String]) throws(TrialError) -> [ABResult] {
        var results: [ABResult] = []
        for name in names { results.append(try Self.loadRun(at: runDirectory(name))) }
        return results
    }

    /// Creates the directory (0700) of a new run started at `startedAt`, named by an id that sorts
    /// by time (`20261201T154500Z-1a2b3c4d`).
    public func createRun(startedAt: Date) throws(TrialError) -> (id: String, directory: URL) {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        let id = formatter.string(from: startedAt) + "-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let run = directory.appendingPathComponent(id)
        do {
            try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw TrialError(.filesystem, "cannot create \(run.path): \(error.localizedDescription)")
        }
        return (id, run)
    }

    /// Writes a finished run's files into `runDirectory`, each atomically: result.json, trials.csv,
    /// charts.svg and report.html.
    public static func save(_ result: ABResult, in runDirectory: URL) throws(TrialError) {
        let encoded: Data
        do { encoded = try ABResult.encoder().encode(result) } catch {
            throw TrialError(.badResult, "cannot encode the result: \(error)")
        }
        try writeAtomically(encoded, to: runDirectory.appendingPathComponent("result.json"))
        try writeAtomically(Data(result.csv.utf8), to: runDirectory.appendingPathComponent("trials.csv"))
        try writeAtomically(Data(result.svg.utf8), to: runDirectory.appendingPathComponent("charts.svg"))
        try writeAtomically(Data(ABReport.html(result).utf8), to: runDirectory.appendingPathComponent("report.html"))
    }
}
