import Foundation
import PosternLinkSpec
import PosternSystem
import TransportBase
import TransportWire

/// The obfs4 client (spec: obfs4proxy 0.0.14's doc/obfs4-spec.txt), interoperable with obfs4proxy and lyrebird.
public struct Obfs4Transport: PluggableTransport {
    public typealias Configuration = Obfs4BridgeConfiguration

    public static let transportName = TransportName.obfs4
    public var name: TransportName { Self.transportName }

    /// Bounds the TCP connect.
    public var connectTimeout: Duration
    /// Bounds the obfs4 handshake. A bridge that rejects a client stays silent for 30–90 s, so this
    /// is how a rejection surfaces (lyrebird uses 60 s).
    public var handshakeTimeout: Duration
    /// After an ntor AUTH mismatch with bit 254 of our representative set, retry once with it
    /// cleared: obfs4proxy ≤ 0.0.11 bridges decode that bit as part of the value (spec §3.4).
    public var retryForOldBridges: Bool

    public init(connectTimeout: Duration = .seconds(30), handshakeTimeout: Duration = .seconds(60), retryForOldBridges: Bool = true) {
        self.connectTimeout = connectTimeout
        self.handshakeTimeout = handshakeTimeout
        self.retryForOldBridges = retryForOldBridges
    }

    public func configuration(from arguments: TransportArguments) throws(TransportError) -> Obfs4BridgeConfiguration {
        try Obfs4BridgeConfiguration(arguments: arguments)
    }

    public func dial(_ endpoint: TransportEndpoint, configuration: Obfs4BridgeConfiguration,
                     context: DialContext) async throws -> any TransportConnection {
        let events = context.events
        events.emit(TransportEvent(kind: .dialStarted, severity: .debug, transport: name, message: "connecting"))
        // Keys are made before connecting (ahead of time, in fact) so the number of Elligator2 retries
        // is not visible in the handshake's timing.
        let firstKey = try EphemeralKeyCache.shared.take()
        do {
            return try await attempt(endpoint, configuration: configuration, keyPair: firstKey, context: context)
        } catch let error as TransportError where error.code == .obfs4AuthMismatch
            && retryForOldBridges && firstKey.representative[31] & 0x40 != 0 {
            events.emit(TransportEvent(kind: .retrying, severity: .notice, transport: name,
                                       message: "ntor AUTH mismatch; retrying once with representative bit 254 cleared (obfs4proxy <= 0.0.11 bridge)"))
            let retryKey = try RepresentableKeyPair.generate(clearTweakBit254: true)
            return try await attempt(endpoint, configuration: configuration, keyPair: retryKey, context: context)
        } catch {
            let reason = (error as? TransportError)?.description ?? "unexpected error"
            events.emit(TransportEvent(kind: .dialFailed, severity: .warning, transport: name, message: reason,
                                       error: error as? TransportError))
            throw error
        }
    }

    private func attempt(_ endpoint: TransportEndpoint, configuration: Obfs4BridgeConfiguration,
                         keyPair: RepresentableKeyPair, context: DialContext) async throws -> Obfs4Connection {
        let events = context.events
        let handshake = ClientHandshake.random(identity: configuration.identity, keyPair: keyPair,
                                               now: Date().timeIntervalSince1970)
        let started = ContinuousClock.now
        let socket = try await context.dialer.connect(to: endpoint, timeout: connectTimeout)
        let timeout = handshakeTimeout
        do {
            let outcome = try await withDeadline(timeout, expired: {
                socket.abort(with: TransportError(code: .obfs4HandshakeTimeout, kind: .timeout,
                                                  message: "no valid handshake from the server within \(timeout) (a rejecting bridge stays silent)"))
            }) {
                try await Self.runHandshake(handshake, on: socket)
            }
            let elapsed = ContinuousClock.now - started
            events.emit(TransportEvent(kind: .connected, severity: .info, transport: name,
                                       message: "handshake completed in \(PlainText.milliseconds(elapsed))"))
            return Obfs4Connection(socket: socket, keyMaterial: outcome.keyMaterial, remainder: outcome.remainder,
                                   iatMode: configuration.iatMode)
        } catch {
            socket.close()
            throw error
        }
    }

    private static func runHandshake(_ handshake: ClientHandshake, on socket: TCPSocket) async throws -> ClientHandshake.Outcome {
        try await socket.write(handshake.request())
        var reader = ClientHandshakeReader(handshake: handshake)
        while true {
            let chunk = try await socket.read(maximumCount: 16384)
            if chunk.isEmpty {
                throw TransportError(code: .obfs4ServerClosed, kind: .protocolViolation,
                                     message: "the server closed the connection during the handshake")
            }
            if let outcome = try reader.feed(chunk) { return outcome }
        }
    }
}
