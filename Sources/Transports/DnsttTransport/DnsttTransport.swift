import PosternLinkSpec
import PosternSystem
import TransportBase

/// The dnstt client as a pluggable transport (reference: dnstt by David Fifield,
/// www.bamsoftware.com/software/dnstt/; docs/plans/DNSTT.md).
///
/// One dial is one DnsttSession on a resolver link of its own, with a fresh ClientID, KCP
/// conversation, Noise handshake and smux stream, as the reference PT client builds per SOCKS
/// connection. `dial` returns once the Noise handshake is done and the server has acknowledged the
/// stream's opening, so tor's SOCKS request succeeds only when the tunnel carries bytes. The
/// endpoint tor asks for is ignored: a dnstt bridge's address is a placeholder, and the server
/// pipes the stream to its own bridge.
///
/// Resolver paths (``resolverLink(for:context:resolveTimeout:)``): `udp=` (UDPLink, never through
/// an upstream proxy), `dot=` (DoTLink) and `doh=` (DoHLink, HTTP/2 or HTTP/1.1), both through the
/// session's dialer with the Firefox ESR hello.
public struct DnsttTransport: PluggableTransport {
    public typealias Configuration = DnsttOptions

    public static let transportName = TransportName.dnstt
    public var name: TransportName { Self.transportName }

    /// How long the Noise handshake and the stream's opening may take.
    public var handshakeTimeout: Duration
    /// How long the system resolver may take for a resolver given by name.
    public var resolveTimeout: Duration

    public init(handshakeTimeout: Duration = .seconds(60), resolveTimeout: Duration = .seconds(10)) {
        self.handshakeTimeout = handshakeTimeout
        self.resolveTimeout = resolveTimeout
    }

    public func configuration(from arguments: TransportArguments) throws(TransportError) -> DnsttOptions {
        try DnsttOptions(arguments: arguments)
    }

    public func dial(_ endpoint: TransportEndpoint, configuration: DnsttOptions,
                     context: DialContext) async throws -> any TransportConnection {
        try await establish(configuration, context: context)
    }

    /// What `postern bridges test` reports of a dial, in the order they can happen.
    public enum Stage: String, Sendable, Hashable {
        /// The link to the resolver is up (udp: a socket, nothing sent yet; dot and doh: TCP and
        /// TLS with the resolver, its certificate verified).
        case link
        /// A DNS message came back over the link.
        case answered
        /// A KCP packet of our conversation came back: the dnstt server answered through the resolver.
        case server
        /// The server's KCP acknowledged everything we sent (our Noise handshake message included).
        case acknowledged
        /// The server's Noise handshake message arrived and verified against the pubkey.
        case noise
        /// The server acknowledged the stream's opening: the tunnel carries bytes.
        case open
    }

    /// A dial that tells `stageReached` each stage as it is first seen (`postern bridges test`).
    public func probe(_ configuration: DnsttOptions, context: DialContext,
                      stageReached: @escaping @Sendable (Stage) -> Void) async throws -> any TransportConnection {
        try await establish(configuration, context: context, stageReached: stageReached)
    }

    private func establish(_ configuration: DnsttOptions, context: DialContext,
                           stageReached: @escaping @Sendable (Stage) -> Void = { _ in }) async throws -> any TransportConnection {
        let events = context.events
        let name = name
        events.emit(TransportEvent(kind: .dialStarted, severity: .debug, transport: name, message: "Noise handshake through the resolver"))
        let started = ContinuousClock.now
        do {
            let link = try await Self.resolverLink(for: configuration.resolver, context: context, resolveTimeout: resolveTimeout)
            stageReached(.link)
            let session: DnsttSession
            do {
                session = try DnsttSession(link: link, serverPublicKey: configuration.publicKey, domain: configuration.domain,
                                           mtu: configuration.mtu, handshakeTimeout: handshakeTimeout, stageReached: stageReached)
            } catch {
                await link.close()
                throw error
            }
            try await withTaskCancellationHandler {
                try await session.open()
            } onCancel: {
                Task { await session.close() }
            }
            let elapsed = ContinuousClock.now - started
            events.emit(TransportEvent(kind: .connected, severity: .info, transport: name,
                                       message: "stream open through the resolver in \(PlainText.milliseconds(elapsed))"))
            return DnsttConnection(session: session)
        } catch {
            let failure = TransportError(dnstt: error)
            events.emit(TransportEvent(kind: .dialFailed, severity: .warning, transport: name, message: failure.description, error: failure))
            throw failure
        }
    }

    /// The link to the resolver a bridge line names. A `udp=` resolver given by name is looked up
    /// by the system resolver (outside Tor, like the reference client's).
    package static func resolverLink(for resolver: DnsttOptions.Resolver, context: DialContext,
                                     resolveTimeout: Duration) async throws -> any ResolverLink {
        switch resolver {
        case .udp(let host, let port):
            // UDP cannot go through a SOCKS5 upstream proxy: going direct would bypass the proxy
            // the user asked for, so refuse (IPtProxy refuses proxies for dnstt entirely).
            guard context.dialer.proxy == nil else {
                throw TransportError(code: .unsupportedProxy, kind: .invalidInput,
                                     message: "dnstt over udp= cannot run through an upstream proxy (use dot= or doh=)")
            }
            let address: TransportEndpoint
            if let literal = try? TransportEndpoint(parsing: host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)") {
                address = literal
            } else {
                guard let first = try await HostLookup.addresses(of: host, port: port, timeout: resolveTimeout,
                                                                 label: "the dnstt resolver").first else {
                    throw TransportError(code: .hostLookupFailed, kind: .network, message: "the system resolver has no address for the dnstt resolver")
                }
                address = first
            }
            return try UDPLink.connect(to: address)
        case .dot(let host, let port):
            // Through the session's dialer (an upstream proxy is honoured), the Firefox ESR hello;
            // the system's trust store (SSL_CERT_FILE honoured).
            return try await DoTLink.connect(host: host, port: port, dialer: context.dialer)
        case .doh(let url):
            return try await DoHLink.connect(url: url, dialer: context.dialer)
        }
    }
}

extension TransportError {
    /// A dnstt failure in the transports' common error type: dnstt's codes become `dnstt-…`.
    public init(dnstt error: any Error) {
        if let error = error as? TransportError {
            self = error
        } else if let error = error as? DnsttError {
            let kind: TransportError.Kind
            switch error.kind {
            case .invalidInput: kind = .invalidInput
            case .protocolViolation: kind = .protocolViolation
            case .timeout: kind = .timeout
            default: kind = .network
            }
            self.init(code: TransportError.Code(rawValue: "dnstt-\(error.code.rawValue)"), kind: kind, message: error.message)
        } else if error is CancellationError {
            self.init(code: .cancelled, kind: .cancelled, message: "the dnstt dial was cancelled")
        } else {
            self.init(code: .connectionClosed, kind: .network, message: "dnstt session failed (\(type(of: error)))")
        }
    }
}
