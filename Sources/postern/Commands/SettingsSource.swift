import BridgeConfig
import Foundation
import PosternCore

/// The settings a run follows: the store, plus this run's `--bridge` and `--transport` overrides.
struct SettingsSource: Sendable {
    let store: BridgeStore
    let overrideBridges: [BridgeLine]
    let overrideTransport: TransportSelection?
    let logging: LoggingPolicy
    /// Runs the in-process listeners of the transports the plan uses.
    let transports: TransportHost

    init(_ invocation: Invocation, transports: TransportHost) throws {
        self.transports = transports
        logging = invocation.unsafeLogging ? .unsafe : .safe
        do {
            store = try BridgeStore(directory: invocation.arguments.value("config-dir"))
        } catch {
            throw CommandFailure(error.message)
        }
        var bridges: [BridgeLine] = []
        for (index, text) in invocation.arguments.all("bridge").enumerated() {
            do {
                bridges.append(try BridgeLine.parse(text, logging: logging).line)
            } catch {
                throw invocation.usageError("--bridge #\(index + 1): \(error.message)")
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
                                       overrideTransport: overrideTransport, pluginPorts: [:])
        let ports: [String: UInt16]
        do {
            ports = try transports.ensure(draft.transports.map(\.rawValue))
        } catch {
            throw CommandFailure(error.message)
        }
        guard !ports.isEmpty else { return draft }
        var named: [TransportName: UInt16] = [:]
        for (name, port) in ports {
            if let transport = TransportName(name) { named[transport] = port }
        }
        return try RoutePlan.make(configuration: configuration, overrideBridges: overrideBridges,
                                  overrideTransport: overrideTransport, pluginPorts: named)
    }

    /// Changes whenever the store file is replaced (its writes are atomic renames).
    func storeStamp() -> String {
        var info = stat()
        guard stat(store.filePath, &info) == 0 else { return "absent" }
        return "\(info.st_ino)-\(info.st_mtim.tv_sec)-\(info.st_mtim.tv_nsec)-\(info.st_size)"
    }
}
