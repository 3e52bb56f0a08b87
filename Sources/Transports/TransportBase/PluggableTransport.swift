import TransportWire

/// A bidirectional byte stream produced by a transport (or a plain TCP socket): TransportWire's
/// one stream protocol, under the name the transports have always used.
public typealias TransportConnection = ByteStream

/// Something that happened inside a transport, for logs and status lines.
///
/// Messages never contain bridge addresses, certificates or keys.
public struct TransportEvent: Sendable, CustomStringConvertible {
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let dialStarted = Kind(rawValue: "dial-started")
        public static let connected = Kind(rawValue: "connected")
        public static let retrying = Kind(rawValue: "retrying")
        public static let dialFailed = Kind(rawValue: "dial-failed")
        public static let connectionClosed = Kind(rawValue: "connection-closed")
        public static let clientRejected = Kind(rawValue: "client-rejected")
        /// An external plugin runs without an egress gate (``ManagedPluginClient/egressNotice``).
        public static let egressUnrestricted = Kind(rawValue: "egress-unrestricted")
    }

    public enum Severity: String, Sendable {
        case error, warning, notice, info, debug
    }

    public let kind: Kind
    public let severity: Severity
    public let transport: TransportName
    public let message: String
    /// The typed error of a failed dial (connection assist counts these as failure signals).
    public let error: TransportError?

    public init(kind: Kind, severity: Severity, transport: TransportName, message: String, error: TransportError? = nil) {
        self.kind = kind
        self.severity = severity
        self.transport = transport
        self.message = message
        self.error = error
    }

    public var description: String { "\(transport) \(kind): \(message)" }
}

/// Where transports report events. The default discards them.
public struct TransportEventSink: Sendable {
    private let handler: @Sendable (TransportEvent) -> Void
    public init(_ handler: @escaping @Sendable (TransportEvent) -> Void) { self.handler = handler }
    public static let discard = TransportEventSink { _ in }
    public func emit(_ event: TransportEvent) { handler(event) }
}

/// What a dial needs besides the bridge: where to report events and how to open TCP connections.
public struct DialContext: Sendable {
    public var events: TransportEventSink
    public var dialer: OutboundDialer

    public init(events: TransportEventSink = .discard, dialer: OutboundDialer = .direct) {
        self.events = events
        self.dialer = dialer
    }
}

/// A pluggable transport: validated per-bridge arguments in, an obfuscated byte stream out.
public protocol PluggableTransport: Sendable {
    /// The validated, typed form of one bridge's arguments.
    associatedtype Configuration: Sendable

    var name: TransportName { get }

    /// Validates arguments before any network activity. Errors name the argument and the reason but
    /// never echo secret values.
    func configuration(from arguments: TransportArguments) throws(TransportError) -> Configuration

    /// Connects to `endpoint` and completes the transport's handshake.
    func dial(_ endpoint: TransportEndpoint, configuration: Configuration, context: DialContext) async throws -> any TransportConnection
}

/// A dial whose arguments have already been validated.
public struct PreparedDial: Sendable {
    public let transport: TransportName
    private let body: @Sendable (TransportEndpoint, DialContext) async throws -> any TransportConnection

    public func dial(_ endpoint: TransportEndpoint, context: DialContext) async throws -> any TransportConnection {
        try await body(endpoint, context)
    }

    init(transport: TransportName, body: @escaping @Sendable (TransportEndpoint, DialContext) async throws -> any TransportConnection) {
        self.transport = transport
        self.body = body
    }
}

extension PluggableTransport {
    /// Validates `arguments` now and returns a dial that can run later.
    public func prepareDial(arguments: TransportArguments) throws(TransportError) -> PreparedDial {
        let configuration = try self.configuration(from: arguments)
        return PreparedDial(transport: name) { endpoint, context in
            try await self.dial(endpoint, configuration: configuration, context: context)
        }
    }
}

/// The transports an executable offers. Built explicitly; names are unique.
public struct TransportRegistry: Sendable {
    private var transportsByName: [TransportName: any PluggableTransport] = [:]

    public init() {}

    public init(_ transports: [any PluggableTransport]) throws(TransportError) {
        for transport in transports { try register(transport) }
    }

    public mutating func register(_ transport: any PluggableTransport) throws(TransportError) {
        guard transportsByName[transport.name] == nil else {
            throw TransportError(code: .duplicateTransport, kind: .invalidInput,
                                 message: "transport \"\(transport.name)\" is registered twice")
        }
        transportsByName[transport.name] = transport
    }

    public func transport(named name: TransportName) -> (any PluggableTransport)? { transportsByName[name] }

    /// Registered names, sorted.
    public var names: [TransportName] { transportsByName.keys.sorted() }
}
