import PosternLinkSpec
import PosternSystem
import Synchronization
import TransportBase
import TransportTLS
import TransportWire

/// The webtunnel client (reference: lyrebird v0.5.0 transports/webtunnel; wire format in
/// UpgradeFraming.swift): TCP to the url host, TLS (TransportTLS's BrowserTLSStream, Firefox ESR's
/// hello), an HTTP/1.1 upgrade on the bridge's secret path, then tor's bytes unframed.
/// Interoperates with webtunnel servers behind any web server that forwards the upgrade (nginx in
/// the test bed).
public struct WebtunnelTransport: PluggableTransport {
    public typealias Configuration = WebtunnelOptions

    public static let transportName = TransportName.webtunnel
    public var name: TransportName { Self.transportName }

    /// Bounds each TCP connect (one per resolved address, tried in order).
    public var connectTimeout: Duration
    /// Bounds the system resolver's answer.
    public var resolveTimeout: Duration
    /// Bounds TLS, the upgrade request and the 101 answer, together.
    public var handshakeTimeout: Duration
    /// An extra CA bundle trusted besides the system store; nil in production. (The test bed
    /// points OpenSSL's SSL_CERT_FILE, which the certificate check honours, at its CA instead;
    /// see docs/transports.md.)
    public var caFile: String?
    /// How the url host becomes addresses; tests replace it to reach a loopback peer, which the
    /// reference client's filter (and therefore ours) refuses.
    let resolver: @Sendable (String, UInt16, Duration) async throws(TransportError) -> [TransportEndpoint]

    public init(connectTimeout: Duration = .seconds(30), resolveTimeout: Duration = .seconds(20),
                handshakeTimeout: Duration = .seconds(30), caFile: String? = nil) {
        self.init(connectTimeout: connectTimeout, resolveTimeout: resolveTimeout, handshakeTimeout: handshakeTimeout,
                  caFile: caFile, resolver: { host, port, timeout throws(TransportError) in
                      try await AddressResolution.resolve(host: host, port: port, timeout: timeout)
                  })
    }

    init(connectTimeout: Duration = .seconds(30), resolveTimeout: Duration = .seconds(20), handshakeTimeout: Duration = .seconds(30),
         caFile: String? = nil, resolver: @escaping @Sendable (String, UInt16, Duration) async throws(TransportError) -> [TransportEndpoint]) {
        self.connectTimeout = connectTimeout
        self.resolveTimeout = resolveTimeout
        self.handshakeTimeout = handshakeTimeout
        self.caFile = caFile
        self.resolver = resolver
    }

    public func configuration(from arguments: TransportArguments) throws(TransportError) -> WebtunnelOptions {
        try WebtunnelOptions(arguments: arguments)
    }

    /// `endpoint` (the bridge line's synthetic address) is ignored: the reference client dials the
    /// url host's addresses instead, and so do we.
    public func dial(_ endpoint: TransportEndpoint, configuration: WebtunnelOptions,
                     context: DialContext) async throws -> any TransportConnection {
        let events = context.events
        events.emit(TransportEvent(kind: .dialStarted, severity: .debug, transport: name, message: "resolving the url host and connecting"))
        if let substitution = configuration.tls.substitution, let asked = configuration.tls.requestedName {
            // Said on every dial: the user asked for a disguise we can only approach.
            events.emit(TransportEvent(kind: .dialStarted, severity: .warning, transport: name,
                                       message: "utls=\(asked): \(substitution) (docs/FINGERPRINTS.md)"))
        }
        let started = ContinuousClock.now
        do {
            let connection = try await establish(configuration, context: context)
            let elapsed = ContinuousClock.now - started
            events.emit(TransportEvent(kind: .connected, severity: .info, transport: name,
                                       message: "upgraded in \(PlainText.milliseconds(elapsed))"))
            return connection
        } catch {
            let reason = (error as? TransportError)?.description ?? "unexpected error"
            // The typed error too: connection assist reads a rejected certificate from it, and a
            // fixed route ends on it at once.
            events.emit(TransportEvent(kind: .dialFailed, severity: .warning, transport: name, message: reason,
                                       error: error as? TransportError))
            throw error
        }
    }

    /// At most this many of the url host's addresses are tried, in the resolver's order.
    public static let maximumAddressesTried = 8

    /// The steps a health check reports, each with its own outcome.
    public enum Stage: String, Sendable {
        case resolve, tcp, tls, upgrade, switched = "101"
    }

    /// Like `dial`, but tells which stage failed (for `postern bridges test`).
    public func probe(_ configuration: WebtunnelOptions, context: DialContext,
                      stageReached: @escaping @Sendable (Stage) -> Void) async throws -> any TransportConnection {
        try await establish(configuration, context: context, stageReached: stageReached)
    }

    private func establish(_ options: WebtunnelOptions, context: DialContext,
                           stageReached: @escaping @Sendable (Stage) -> Void = { _ in }) async throws -> any TransportConnection {
        let addresses = try await resolver(options.urlHost, options.port, resolveTimeout)
        stageReached(.resolve)
        var socket: TCPSocket?
        var lastError: (any Error)?
        // Each attempt has its own connect deadline; the cap bounds the whole (a name may resolve
        // to many addresses).
        for address in addresses.prefix(Self.maximumAddressesTried) {
            do {
                socket = try await context.dialer.connect(to: address, timeout: connectTimeout)
                break
            } catch {
                lastError = error
                if Task.isCancelled { throw error }
            }
        }
        guard let socket else {
            let reason = (lastError as? TransportError)?.message ?? "no address answered"
            throw TransportError(code: .webtunnelConnectFailed, kind: .network,
                                 message: "no address of the url host accepted a connection (\(min(addresses.count, Self.maximumAddressesTried)) tried; last: \(reason))")
        }
        stageReached(.tcp)
        let timeout = handshakeTimeout
        do {
            return try await withDeadline(timeout, expired: {
                socket.abort(with: TransportError(code: .webtunnelHandshakeTimeout, kind: .timeout,
                                                  message: "TLS and the upgrade did not complete within \(timeout)"))
            }) {
                let stream: any TransportConnection
                if options.scheme == .https {
                    stream = try await BrowserTLSStream.handshake(over: socket, configuration: tlsConfiguration(options))
                    stageReached(.tls)
                } else {
                    stream = socket
                }
                try await stream.write(UpgradeRequest.bytes(requestTarget: options.requestTarget, host: options.serverName))
                stageReached(.upgrade)
                let early = try await Self.readUpgradeResponse(from: stream)
                stageReached(.switched)
                return WebtunnelConnection(stream: stream, early: early)
            }
        } catch let error as TransportError {
            socket.close()
            throw Self.webtunnelError(error)
        } catch {
            socket.close()
            throw error
        }
    }

    /// ALPN: http/1.1 alone. webtunnel is an HTTP/1.1 Upgrade, which cannot ride HTTP/2 (RFC 8441's
    /// extended CONNECT is another request, which webtunnel servers do not take), so a server that
    /// picked h2 would break the dial. Firefox ESR 153 itself offers h2,http/1.1 even on the
    /// connection it opens for a wss:// WebSocket (measured, docs/FINGERPRINTS.md), so this hello
    /// differs from Firefox's in ALPN (JA4 `h1` where Firefox has `h2`); lyrebird's Go crypto/tls
    /// offers no ALPN at all, which no browser does.
    public static let applicationProtocols = ["http/1.1"]

    /// The url host's TLS: SNI and certificate name = `servername=` or the url host (an IP literal
    /// is checked as an address and never sent as SNI), Firefox ESR's hello with http/1.1 alone,
    /// the system trust plus `caFile`. Its own deadline equals the dial's, whose timer (started
    /// first) aborts the socket with webtunnel's timeout.
    func tlsConfiguration(_ options: WebtunnelOptions) -> BrowserTLSConfiguration {
        BrowserTLSConfiguration(serverName: options.serverName, applicationProtocols: Self.applicationProtocols,
                                profile: options.tls.profile, caFile: caFile, handshakeTimeout: handshakeTimeout)
    }

    /// TransportTLS's failures under webtunnel's codes, as the TLS stream's were before: a timeout
    /// is the dial's handshake timeout, every other TLS failure `webtunnel-tls-failed` with the TLS
    /// reason kept in the message (a rejected certificate says "certificate verify failed: ...").
    static func webtunnelError(_ error: TransportError) -> TransportError {
        switch error.code {
        case .tlsHandshakeTimedOut:
            return TransportError(code: .webtunnelHandshakeTimeout, kind: .timeout, message: error.message)
        case .tlsSetupFailed, .tlsHandshakeFailed, .tlsCertificateRejected, .tlsHandshakeTooLarge, .tlsRecordRejected:
            return TransportError(code: .webtunnelTLSFailed, kind: error.code == .tlsSetupFailed ? .internal : .protocolViolation,
                                  message: error.message)
        default:
            return error
        }
    }

    private static func readUpgradeResponse(from stream: any TransportConnection) async throws -> [UInt8] {
        var received: [UInt8] = []
        while true {
            let chunk = try await stream.read(maximumCount: 4096)
            guard !chunk.isEmpty else {
                throw TransportError(code: .webtunnelServerClosed, kind: .protocolViolation,
                                     message: "the server closed the connection before answering the upgrade request")
            }
            received += chunk
            if let early = try UpgradeResponse.parse(received) { return early }
        }
    }
}

/// The tunnel after the 101: tor's bytes as they are, the few that came with the answer first.
final class WebtunnelConnection: TransportConnection, Sendable {
    private let stream: any TransportConnection
    private let early: Mutex<[UInt8]>

    init(stream: any TransportConnection, early: [UInt8]) {
        self.stream = stream
        self.early = Mutex(early)
    }

    func read(maximumCount: Int) async throws -> [UInt8] {
        let buffered = early.withLock { bytes -> [UInt8] in
            let count = min(bytes.count, max(1, maximumCount))
            defer { bytes.removeFirst(count) }
            return Array(bytes.prefix(count))
        }
        if !buffered.isEmpty { return buffered }
        return try await stream.read(maximumCount: maximumCount)
    }

    func write(_ bytes: [UInt8]) async throws { try await stream.write(bytes) }
    func closeWrite() async { await stream.closeWrite() }
    func close() { stream.close() }
}
