import Foundation
import Synchronization
import TransportBase

/// Runs the in-process PT SOCKS listeners that tor's `ClientTransportPlugin NAME socks5
/// 127.0.0.1:PORT` lines point at: one per transport that some bridge in use needs, none for the
/// others. The registry comes from the executable; transports never know about each other.
public final class TransportHost: Sendable {
    private let registry: TransportRegistry
    private let events: TransportEventSink
    private let listeners = Mutex<[String: PTSocksServer]>([:])

    public init(registry: TransportRegistry, events: TransportEventSink = .discard) {
        self.registry = registry
        self.events = events
    }

    /// The transports this build offers.
    public var availableTransports: [String] { registry.names.map(\.rawValue) }

    /// Starts listeners for `names` that are not running yet and stops the ones no longer named.
    /// Returns the port of every named transport.
    public func ensure(_ names: [String]) throws(TorCoreError) -> [String: UInt16] {
        var transports: [String: any PluggableTransport] = [:]
        for name in names {
            guard let transportName = TransportName(name), let transport = registry.transport(named: transportName) else {
                throw TorCoreError(.invalidConfiguration, kind: .usage,
                                   "the \(name) transport is not available in this build (available: \(availableTransports.joined(separator: ", "))); an external client can serve it: 'postern transport plugin add \(name) PATH'")
            }
            transports[name] = transport
        }
        let result: Result<[String: UInt16], TorCoreError> = listeners.withLock { running in
            for (name, listener) in running where transports[name] == nil {
                listener.stop()
                running[name] = nil
            }
            for (name, transport) in transports where running[name] == nil {
                do {
                    running[name] = try PTSocksServer(transport: transport, events: events)
                } catch {
                    return .failure(TorCoreError(.invalidConfiguration, "cannot start the \(name) listener: \(error)"))
                }
            }
            return .success(running.mapValues(\.port))
        }
        return try result.get()
    }

    /// Stops every listener and waits for their sessions to end.
    public func stopAll() async {
        let stopped = listeners.withLock { running -> [PTSocksServer] in
            defer { running = [:] }
            return Array(running.values)
        }
        for listener in stopped {
            listener.stop()
            await listener.waitUntilStopped()
        }
    }
}
