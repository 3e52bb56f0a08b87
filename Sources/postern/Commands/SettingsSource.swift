import BridgeConfig
import Foundation
import PosternCore

/// The settings a run follows: the store, plus this run's `--bridge` and `--transport` overrides,
/// the built-in bridges and connection assist's limits.
struct SettingsSource: Sendable {
    let store: BridgeStore
    let overrideBridges: [BridgeLine]
    let overrideTransport: TransportSelection?
    let logging: LoggingPolicy
    /// Runs the in-process listeners of the transports the plan uses.
    let transports: TransportHost
    /// The built-in bridges: `--builtin-bridges FILE`, else the bundled list, else none. A private
    /// network (DirAuthority or TestingTorNetwork in `--tor-options-file`) gets none unless named:
    /// Tor Browser's public bridges cannot reach it, and tests must never dial them.
    let builtins: BuiltinBridges?
    /// Connection assist's limits: the settings file, then `--route-timeout`, capped by
    /// `--stall-timeout` when given.
    let limits: RouteLimitTable
    /// Where the last good route is remembered.
    let stateDirectory: URL

    init(_ invocation: Invocation, transports: TransportHost) throws {
        self.transports = transports
        logging = invocation.unsafeLogging ? .unsafe : .safe
        stateDirectory = invocation.paths.stateDirectory
        let arguments = invocation.arguments
        if let file = arguments.value("builtin-bridges") {
            builtins = try Self.readBuiltins(file, invocation: invocation)
        } else if let file = arguments.value("tor-options-file"),
                  let options = try? TorOption.parseLines(String(contentsOfFile: file, encoding: .utf8)),
                  options.contains(where: { ["DirAuthority", "AlternateDirAuthority", "TestingTorNetwork"].contains($0.key) }) {
            builtins = nil
        } else {
            builtins = try? BuiltinBridges.bundled()
        }
        var limits: RouteLimitTable
        do {
            limits = try AssistFiles.readLimits(in: invocation.paths.configDirectory)
        } catch {
            throw CommandFailure(error.message)
        }
        for text in arguments.all("route-timeout") {
            guard let equals = text.firstIndex(of: "=") else {
                throw invocation.usageError("--route-timeout needs KIND=CEILING/WINDOW (e.g. direct=45/30), not '\(text)'")
            }
            do {
                let kind = try RouteLimitTable.kind(validating: String(text[..<equals]))
                limits.set(try RouteLimits(parsing: String(text[text.index(after: equals)...])), forKind: kind)
            } catch {
                throw invocation.usageError("--route-timeout \(text): \(error.message)")
            }
        }
        if let text = arguments.value("stall-timeout"), let seconds = Double(text), seconds > 0 {
            limits.ceilingCap = .milliseconds(Int64(seconds * 1000))
        }
        self.limits = limits
        do {
            store = try BridgeStore(directory: invocation.arguments.value("config-dir"))
        } catch {
            throw CommandFailure(error.message)
        }
        var bridges: [BridgeLine] = []
        let given = invocation.arguments.all("bridge")
        if !given.isEmpty {
            InputReader.warnSecretOnCommandLine("--bridge", instead: "--bridges-file FILE (or --bridges-file - for standard input)",
                                                output: invocation.output)
        }
        for (index, text) in given.enumerated() {
            do {
                bridges.append(try BridgeLine.parse(text, logging: logging).line)
            } catch {
                throw invocation.usageError("--bridge #\(index + 1): \(error.message)")
            }
        }
        if let file = invocation.arguments.value("bridges-file") {
            let lines = try InputReader.bridgeLines(from: file, output: invocation.output)
            guard !lines.isEmpty else { throw invocation.usageError("--bridges-file \(file): no bridge lines in it") }
            for (number, text) in lines {
                do {
                    bridges.append(try BridgeLine.parse(text, logging: logging).line)
                } catch {
                    throw invocation.usageError("--bridges-file \(file) line \(number): \(error.message)")
                }
            }
        }
        overrideBridges = bridges
        if let text = invocation.arguments.value("transport") {
            do {
                overrideTransport = try TransportSelection(validating: text)
            } catch {
                throw invocation.usageError("--transport: \(error.message)")
            }
        } else {
            overrideTransport = nil
        }
    }

    func load() throws -> BridgeConfiguration {
        do { return try store.load() } catch { throw CommandFailure(error.message) }
    }

    func plan() throws -> RoutePlan {
        let configuration = try load()
        guard configuration.torEnabled else {
            throw CommandFailure("Tor is turned off in the settings ('postern tor on' turns it back on); not starting")
        }
        // First learn which transports the bridges need, then start (only) those listeners and
        // render their ports into the ClientTransportPlugin lines.
        let draft = try RoutePlan.make(configuration: configuration, overrideBridges: overrideBridges,
                                       overrideTransport: overrideTransport, pluginPorts: [:], builtins: builtins)
        let ports: [String: UInt16]
        do {
            ports = try transports.ensure(draft.transports.map(\.rawValue))
        } catch {
            throw CommandFailure(error.message)
        }
        guard !ports.isEmpty else {
            transports.admit(draft.bridges)
            return draft
        }
        var named: [TransportName: UInt16] = [:]
        for (name, port) in ports {
            if let transport = TransportName(name) { named[transport] = port }
        }
        let plan = try RoutePlan.make(configuration: configuration, overrideBridges: overrideBridges,
                                      overrideTransport: overrideTransport, pluginPorts: named, builtins: builtins)
        // Before tor gets the plan: its listeners accept exactly these bridges.
        transports.admit(plan.bridges)
        return plan
    }

    /// How the run reaches tor under the current settings.
    enum Mode: Equatable {
        /// `auto`: connection assist tries these routes in order.
        case assist(AssistRoutePlan)
        /// direct or one transport.
        case fixed(RoutePlan)
    }

    func mode() throws -> Mode {
        let configuration = try load()
        guard configuration.torEnabled else {
            throw CommandFailure("Tor is turned off in the settings ('postern tor on' turns it back on); not starting")
        }
        guard (overrideTransport ?? configuration.transport) == .auto else { return .fixed(try plan()) }
        var available = Set(transports.availableTransports.compactMap(TransportName.init))
        available.insert(.vanilla)
        let lastGood = AssistFiles.readLastGoodRoute(in: stateDirectory)
        let memory = AssistMemory.read(in: stateDirectory)
        let network = memory.networkKey(gatewayHardwareAddress: AssistMemory.defaultGatewayHardwareAddress())
        if !overrideBridges.isEmpty {
            // --bridge: exactly these bridges, by transport; no direct attempt, no built-ins.
            return .assist(AssistRoutePlan(yours: overrideBridges, yoursOrigin: .commandLine, builtins: [:],
                                           available: available, limits: limits, lastGood: lastGood, includeDirect: false,
                                           memory: memory, network: network))
        }
        var builtinLines: [TransportName: [BridgeLine]] = [:]
        if let builtins {
            for transport in builtins.transports { builtinLines[transport] = builtins.lines(for: transport) }
        }
        return .assist(AssistRoutePlan(yours: configuration.enabledBridges().map(\.line),
                                       custom: configuration.bridges.map(\.line), builtins: builtinLines,
                                       available: available, limits: limits, lastGood: lastGood, memory: memory, network: network))
    }

    /// The tor options for one connection assist route, starting the listener its transport needs
    /// (and stopping the others).
    func plan(for route: AssistRoute) throws -> RoutePlan {
        guard let transport = route.transport else {
            _ = try? transports.ensure([])
            transports.admit([])
            return RoutePlan(route: route.label, options: [], transports: [], notes: [])
        }
        var ports: [TransportName: UInt16] = [:]
        if !transport.isVanilla {
            do {
                let started = try transports.ensure([transport.rawValue])
                ports[transport] = started[transport.rawValue]
            } catch {
                throw CommandFailure(error.message)
            }
        } else {
            _ = try? transports.ensure([])
        }
        let plan = try RoutePlan.bridges(route.bridges, label: route.label, pluginPorts: ports)
        transports.admit(plan.bridges)
        return plan
    }

    private static func readBuiltins(_ file: String, invocation: Invocation) throws -> BuiltinBridges {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw invocation.usageError("cannot read --builtin-bridges '\(file)'")
        }
        if data.first(where: { !$0.isWhitespaceByte }) == UInt8(ascii: "{") {
            do { return try BuiltinBridges(jsonData: data) } catch {
                throw invocation.usageError("--builtin-bridges '\(file)': \(error.message)")
            }
        }
        var lines: [BridgeLine] = []
        for (index, raw) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var text = raw.trimmingCharacters(in: .whitespaces)
            if text.isEmpty || text.hasPrefix("#") { continue }
            if text.hasPrefix("Bridge ") { text = String(text.dropFirst("Bridge ".count)) }
            do {
                lines.append(try BridgeLine.parse(text, logging: .safe).line)
            } catch {
                throw invocation.usageError("--builtin-bridges '\(file)' line \(index + 1): \(error.message)")
            }
        }
        return BuiltinBridges(source: file, lines: lines)
    }

    /// Changes whenever the store file is replaced (its writes are atomic renames).
    func storeStamp() -> String {
        var info = stat()
        guard stat(store.filePath, &info) == 0 else { return "absent" }
        return "\(info.st_ino)-\(info.st_mtim.tv_sec)-\(info.st_mtim.tv_nsec)-\(info.st_size)"
    }
}

private extension UInt8 {
    var isWhitespaceByte: Bool { self == 0x20 || self == 0x09 || self == 0x0A || self == 0x0D }
}
