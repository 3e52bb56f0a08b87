/// The one error type every transport throws.
///
/// `code` names the precise failure and can grow (transports add their own codes in extensions);
/// `kind` is the coarse category callers branch on; `message` is for people and never carries
/// bridge addresses, certificates or key material.
public struct TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
    }

    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Arguments or configuration were rejected before any network activity.
        public static let invalidInput = Kind(rawValue: "invalid-input")
        /// The operating system refused or lost a connection.
        public static let network = Kind(rawValue: "network")
        /// The peer sent bytes that violate the protocol (or failed authentication).
        public static let protocolViolation = Kind(rawValue: "protocol-violation")
        /// A deadline passed.
        public static let timeout = Kind(rawValue: "timeout")
        /// The operation was cancelled or the object was closed locally.
        public static let cancelled = Kind(rawValue: "cancelled")
        /// A local resource or library call failed.
        public static let `internal` = Kind(rawValue: "internal")
    }

    public let code: Code
    public let kind: Kind
    public let message: String

    public init(code: Code, kind: Kind, message: String) {
        self.code = code
        self.kind = kind
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}

extension TransportError.Code {
    public static let invalidTransportName = Self(rawValue: "invalid-transport-name")
    public static let duplicateTransport = Self(rawValue: "duplicate-transport")
    public static let unknownTransport = Self(rawValue: "unknown-transport")
    public static let invalidArguments = Self(rawValue: "invalid-arguments")
    public static let invalidEndpoint = Self(rawValue: "invalid-endpoint")
    public static let socketFailure = Self(rawValue: "socket-failure")
    public static let connectionRefused = Self(rawValue: "connection-refused")
    public static let networkUnreachable = Self(rawValue: "network-unreachable")
    public static let hostUnreachable = Self(rawValue: "host-unreachable")
    public static let connectionReset = Self(rawValue: "connection-reset")
    public static let connectionClosed = Self(rawValue: "connection-closed")
    public static let timedOut = Self(rawValue: "timed-out")
    public static let cancelled = Self(rawValue: "cancelled")
    public static let socksProtocol = Self(rawValue: "socks-protocol")
    /// A SOCKS CONNECT to something that is not one of the run's bridges (SocksAdmission).
    public static let destinationNotAllowed = Self(rawValue: "destination-not-allowed")
}
