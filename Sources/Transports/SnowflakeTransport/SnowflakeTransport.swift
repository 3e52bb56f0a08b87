import PosternLinkSpec
import PosternSystem
import Foundation
import Synchronization
import TransportBase

/// The snowflake client as a pluggable transport (reference: snowflake v2.x, gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/snowflake).
///
/// One dial is one SnowflakeSession (returned at once; the rendezvous runs behind it): a rendezvous
/// with the broker named by the bridge's `url=` (or through `ampcache=`), a
/// WebRTC data channel to the proxy it assigns, and the tor byte stream as one smux stream over KCP
/// on top. When the proxy goes away the session rendezvouses again and carries on with the same
/// ClientID, so tor keeps its connection. The endpoint tor asks for is ignored: a snowflake
/// bridge's address is a placeholder, and the broker picks the bridge by `fingerprint=`.
public struct SnowflakeTransport: PluggableTransport {
    public typealias Configuration = SnowflakeOptions

    public static let transportName = TransportName.snowflake
    public var name: TransportName { Self.transportName }

    /// How long a session waits for a new proxy after losing one before it gives up.
    public var redialLimit: Duration
    /// How long one rendezvous keeps asking while the broker has no free proxy.
    public var proxyPatience: Duration
    /// CA bundle for an https broker, trusted besides the system store (OpenSSL's default paths,
    /// which honour SSL_CERT_FILE and SSL_CERT_DIR); nil: the system store alone.
    public var caFile: String?
    /// False (the default, as the reference client): `dial` returns at once and the rendezvous
    /// runs behind the stream. True: `dial` returns when the first data channel is open and
    /// throws when it cannot be had (health checks that must tell a dead broker).
    public var waitsForDataChannel: Bool

    public init(redialLimit: Duration = SnowflakeSession.defaultRedialLimit, proxyPatience: Duration = .seconds(60),
                caFile: String? = nil, waitsForDataChannel: Bool = false) {
        self.redialLimit = redialLimit
        self.proxyPatience = proxyPatience
        self.caFile = caFile
        self.waitsForDataChannel = waitsForDataChannel
    }

    public func configuration(from arguments: TransportArguments) throws(TransportError) -> SnowflakeOptions {
        let bridgeArguments: BridgeArguments
        do {
            bridgeArguments = try BridgeArguments(arguments.pairs.map { (key: $0.key, value: $0.value) })
        } catch {
            // BridgeLineError messages name keys, never values.
            throw TransportError(code: .invalidArguments, kind: .invalidInput, message: "snowflake arguments: \(error.message)")
        }
        let options: SnowflakeOptions
        do {
            options = try SnowflakeOptions(arguments: bridgeArguments)
        } catch {
            throw TransportError(error)
        }
        // A broker or cache URL the AMP cache form cannot use is refused here, before any network
        // activity, rather than at the first dial.
        if case .ampCache(let endpoint, let cache) = options.rendezvous {
            do {
                _ = try BrokerRendezvous(endpoint: endpoint, connector: PlainTCPConnector(), ampCache: cache)
                    .resolveAMP(AMPEncoding.encodePath([]))
            } catch {
                throw TransportError(error)
            }
        }
        return options
    }

    public func dial(_ endpoint: TransportEndpoint, configuration: SnowflakeOptions,
                     context: DialContext) async throws -> any TransportConnection {
        let events = context.events
        // WebRTC runs over UDP, which a SOCKS5 upstream proxy cannot carry: going direct instead
        // would bypass the proxy the user asked for, so refuse.
        guard context.dialer.proxy == nil else {
            let error = TransportError(code: .unsupportedProxy, kind: .invalidInput,
                                       message: "snowflake cannot run through an upstream proxy (WebRTC needs UDP)")
            events.emit(TransportEvent(kind: .dialFailed, severity: .warning, transport: name, message: error.description))
            throw error
        }
        events.emit(TransportEvent(kind: .dialStarted, severity: .debug, transport: name, message: "rendezvous with the broker"))
        if let substitution = configuration.tls.substitution, let asked = configuration.tls.requestedName {
            // Said on every dial: the user asked for a disguise we can only approach.
            events.emit(TransportEvent(kind: .dialStarted, severity: .warning, transport: name,
                                       message: "utls-imitate=\(asked): \(substitution) (docs/FINGERPRINTS.md)"))
        }
        let local = Self.usesLoopbackBroker(configuration)
        // As upstream, utls-nosni takes effect only together with utls-imitate.
        let connector = BrowserTLSConnector(caFile: caFile, sendsServerName: configuration.sendsServerName,
                                            profile: configuration.tls.profile)
        let dialer = SnowflakeDialer(options: configuration, connector: connector,
                                     localAddresses: local ? ["127.0.0.1"] : [], keepLocalAddresses: local,
                                     proxyPatience: proxyPatience)
        let session = SnowflakeSession()
        let started = ContinuousClock.now
        let name = name
        let redialLimit = redialLimit
        let spares = configuration.maxProxies - 1
        // Granted at once, as the reference client does (spec section 2): tor starts its TLS
        // handshake while the rendezvous runs, and the session sends it when the data channel is
        // open. A failed first rendezvous ends the stream with the error.
        let opening = Task {
            do {
                try await session.start(dialer: { try await dialer.dial() }, redialLimit: redialLimit, spares: spares)
                let elapsed = ContinuousClock.now - started
                events.emit(TransportEvent(kind: .connected, severity: .info, transport: name,
                                           message: "data channel open in \(PlainText.milliseconds(elapsed))"))
                return nil as TransportError?
            } catch {
                let failure = TransportError(snowflake: error)
                events.emit(TransportEvent(kind: .dialFailed, severity: .warning, transport: name, message: failure.description))
                await session.fail(failure)
                return failure
            }
        }
        if waitsForDataChannel {
            let failure = await withTaskCancellationHandler {
                await opening.value
            } onCancel: {
                Task { await session.close() }
            }
            if let failure { throw failure }
        }
        return SnowflakeConnection(session: session)
    }

    /// A broker on a loopback address means a private test network, whose proxies are reachable
    /// only on loopback: gather host candidates on 127.0.0.1 and keep local candidates in the offer
    /// (the reference client's -keep-local-addresses). Elsewhere local candidates are left out.
    static func usesLoopbackBroker(_ options: SnowflakeOptions) -> Bool {
        let hosts: [String]
        switch options.rendezvous {
        case .http(let endpoint):
            hosts = endpoint.fronts.isEmpty ? [endpoint.url.host ?? ""] : endpoint.fronts.map { String($0.split(separator: ":")[0]) }
        case .ampCache(let endpoint, _):
            // Without fronts the connection goes to <prefix>.<cache host>, never a loopback literal.
            hosts = endpoint.fronts.isEmpty ? [""] : endpoint.fronts.map { String($0.split(separator: ":")[0]) }
        }
        return hosts.allSatisfy { host in
            host == "localhost" || host == "::1" || host == "[::1]"
                || (host.hasPrefix("127.") && host.split(separator: ".").count == 4 && host.split(separator: ".").allSatisfy { UInt8($0) != nil })
        }
    }
}

/// The tor byte stream of one SnowflakeSession.
///
/// `incoming`'s iterator and the bytes left over from a chunk larger than the caller asked for are
/// used by the one reader the TransportConnection contract allows, never concurrently; the
/// session itself is an actor.
final class SnowflakeConnection: TransportConnection, @unchecked Sendable {
    private let session: SnowflakeSession
    private var iterator: AsyncThrowingStream<[UInt8], any Error>.Iterator
    private var pending: ArraySlice<UInt8> = []
    private let closed = Atomic<Bool>(false)

    init(session: SnowflakeSession) {
        self.session = session
        iterator = session.incoming.makeAsyncIterator()
    }

    func read(maximumCount: Int) async throws -> [UInt8] {
        if pending.isEmpty {
            do {
                guard let chunk = try await iterator.next() else { return [] }
                pending = chunk[...]
            } catch {
                throw TransportError(snowflake: error)
            }
        }
        let count = min(max(1, maximumCount), pending.count)
        let out = Array(pending.prefix(count))
        pending = pending.dropFirst(count)
        // Only now has tor read these bytes: smux's window opens (SmuxStreamState).
        await session.acknowledgeRead(count)
        return out
    }

    func write(_ bytes: [UInt8]) async throws {
        do {
            try await session.write(bytes)
        } catch {
            throw TransportError(error)
        }
    }

    func closeWrite() async {
        try? await session.finish()
    }

    func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        let session = session
        Task { await session.close() }
    }

    deinit {
        let session = session
        Task { await session.close() }
    }
}

extension TransportError.Code {
    public static let snowflakeUnsupported = Self(rawValue: "snowflake-unsupported")
}

extension TransportError {
    /// The same failure in the transports' common error type; codes keep their snowflake names.
    init(_ error: SnowflakeError) {
        let kind: TransportError.Kind
        switch error.kind {
        case .invalidInput: kind = .invalidInput
        case .protocolViolation: kind = .protocolViolation
        default: kind = error.code == .timeout ? .timeout : .network
        }
        let code = error.code == .unsupported ? TransportError.Code.snowflakeUnsupported
            : TransportError.Code(rawValue: "snowflake-\(error.code.rawValue)")
        self.init(code: code, kind: kind, message: error.message)
    }

    /// Any error out of a session: snowflake errors keep their code, others become network failures
    /// (their text may come from a lower layer, so only the type is kept).
    init(snowflake error: any Error) {
        if let error = error as? TransportError {
            self = error
        } else if let error = error as? SnowflakeError {
            self.init(error)
        } else if error is CancellationError {
            self.init(code: .cancelled, kind: .cancelled, message: "the snowflake dial was cancelled")
        } else {
            self.init(code: .connectionClosed, kind: .network, message: "snowflake session failed (\(type(of: error)))")
        }
    }
}
