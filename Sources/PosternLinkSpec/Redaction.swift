/// Whether secrets (bridge addresses, fingerprints, certs, URLs) may appear in text meant for logs
/// and error messages. The CLI derives it from `--unsafe-logging` and passes it down explicitly;
/// there is deliberately no global switch.
public struct LoggingPolicy: Hashable, Sendable {
    public var unsafeLogging: Bool
    public init(unsafeLogging: Bool) { self.unsafeLogging = unsafeLogging }

    /// Secrets are replaced by `[scrubbed]`. The default everywhere.
    public static let safe = LoggingPolicy(unsafeLogging: false)
    /// Secrets are shown in the clear (debugging only).
    public static let unsafe = LoggingPolicy(unsafeLogging: true)

    /// The placeholder printed instead of a secret.
    public static let scrubbed = "[scrubbed]"

    /// `text` itself under unsafe logging, `[scrubbed]` otherwise.
    public func reveal(_ text: @autoclosure () -> String) -> String {
        unsafeLogging ? text() : Self.scrubbed
    }
}

/// Wraps a value whose text is secret so that interpolating it into a log line is safe by default.
///
/// Types that know which of their parts are secret (`BridgeLine`, `StoredBridge`) conform to
/// `RedactableDescription` and print their harmless parts (transport, argument keys) in the clear.
public struct Redacted<Value>: CustomStringConvertible {
    public let value: Value
    public let policy: LoggingPolicy

    public init(_ value: Value, policy: LoggingPolicy) {
        self.value = value
        self.policy = policy
    }

    public var description: String {
        if let redactable = value as? any RedactableDescription {
            return redactable.description(policy: policy)
        }
        return policy.reveal(String(describing: value))
    }
}

extension Redacted: Sendable where Value: Sendable {}

/// A type that can describe itself with its secret parts scrubbed.
public protocol RedactableDescription {
    func description(policy: LoggingPolicy) -> String
}
