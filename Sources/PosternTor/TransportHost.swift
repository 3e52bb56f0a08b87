import Foundation
import PosternLinkSpec
import Synchronization
import TransportBase

/// Runs the in-process PT SOCKS listeners that tor's `ClientTransportPlugin NAME socks5
/// 127.0.0.1:PORT` lines point at: one per transport that some bridge in use needs, none for the
/// others. The registry comes from the executable; transports never know about each other.
///
/// Every listener is restricted (``SocksAdmission``): it accepts only the bridges given to
/// ``admit(_:)``, which are the bridges this run hands tor, so another local user cannot use it as
/// a tunnel to anywhere. Until ``admit(_:)`` is called a listener accepts nothing.
public final class TransportHost: Sendable {
    private let registry: TransportRegistry
    private let events: TransportEventSink
    private let listeners = Mutex<[String: PTSocksServer]>([:])
    /// The admitted bridges per transport, applied to listeners started later too.
    private let admitted = Mutex<[String: [SocksAdmission.Bridge]]>([:])
    /// Where every connection the transports open for tor is reported, tagged with the transport
    /// (``FlowOrigin/transport(_:)``); nil reports nothing.
    private let flows: FlowLedger?

    public init(registry: TransportRegistry, events: TransportEventSink = .discard, flows: FlowLedger? = nil) {
        self.registry = registry
        self.events = events
        self.flows = flows
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
                let allowed = admitted.withLock { $0[name] ?? [] }
                do {
                    let dialer = flows.map { OutboundDialer.direct.reporting(to: $0, as: .transport(transport.name)) } ?? .direct
                    running[name] = try PTSocksServer(transport: transport, events: events, dialer: dialer,
                                                      admission: .restricted(to: allowed))
                } catch {
                    return .failure(TorCoreError(.invalidConfiguration, "cannot start the \(name) listener: \(error)"))
                }
            }
            return .success(running.mapValues(\.port))
        }
        return try result.get()
    }

    /// The bridges tor will dial from now on (exactly the `Bridge` lines it is given, placeholder
    /// addresses included): each transport's listener accepts those and nothing else. A line whose
    /// address is not an IP literal cannot be dialled by tor and is not admitted.
    public func admit(_ bridges: [BridgeLine]) {
        var byTransport: [String: [SocksAdmission.Bridge]] = [:]
        for line in bridges where !line.transport.isVanilla {
            guard let endpoint = try? TransportEndpoint(parsing: line.address.description) else { continue }
            let arguments = TransportArguments(line.arguments.map { TransportArguments.Pair(key: $0.key, value: $0.value) })
            byTransport[line.transport.rawValue, default: []].append(SocksAdmission.Bridge(endpoint: endpoint, arguments: arguments))
        }
        admitted.withLock { $0 = byTransport }
        listeners.withLock { running in
            for (name, listener) in running { listener.admission.allow(byTransport[name] ?? []) }
        }
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
