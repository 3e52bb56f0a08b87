/// A transport's rules for the `key=value` arguments of its bridges.
///
/// Each transport states its own rules, in its own module (obfs4's in Obfs4Transport, and so on),
/// and uses the same implementation when it validates the arguments tor hands it at dial time, so
/// the rules are written once. `BridgeLine.parse` asks a ``BridgeArgumentRulebook`` for the rules
/// of a line's transport; a transport that is not in the rulebook is accepted with an
/// `unknownTransport` warning and its arguments are not checked. The parser, not the rules, turns a
/// problem into a message: it labels the word, scrubs it under safe logging and adds the position.
public protocol BridgeArgumentRules: Sendable {
    /// The transport whose lines these rules check.
    var transport: TransportName { get }

    /// True when the transport ignores the bridge's address (it finds the bridge another way, as
    /// snowflake, meek_lite and webtunnel do), so the address word may be a host name.
    var acceptsHostNameAddress: Bool { get }

    /// Checks `review.arguments`. May normalise a value (`review.normalize`) and add warnings
    /// (`review.warn`); throws the first problem that makes the line unusable.
    func review(_ review: inout BridgeArgumentReview) throws(BridgeArgumentProblem)
}

/// What is wrong with a bridge's arguments, as a transport's rules say it.
///
/// `reason` never contains an argument's value (values are the bridge's secrets).
public struct BridgeArgumentProblem: Error, Hashable, Sendable, CustomStringConvertible {
    public let code: BridgeLineError.Code
    /// The argument the problem is about, also when it is missing (a required `cert`); nil for a
    /// problem of the arguments as a whole. A bridge line's message names the key's word only when
    /// the key is in the line.
    public let key: String?
    public let reason: String

    public init(_ code: BridgeLineError.Code, key: String?, _ reason: String) {
        self.code = code
        self.key = key
        self.reason = reason
    }

    /// `key: reason`, for transports that report the problem without a bridge line around it. A key
    /// that does not look like an argument name (a pasted cert before an `=`) is not shown.
    public var description: String {
        guard let key else { return reason }
        return "\(isPrintableKey(key) ? key : "argument"): \(reason)"
    }
}

/// One bridge's arguments while a transport's rules look at them: what the rules read, the values
/// they normalise and the warnings they add.
public struct BridgeArgumentReview: Sendable {
    public let transport: TransportName
    /// The bridge's fingerprint (the word after the address); nil when the arguments did not come
    /// from a bridge line (tor's SOCKS arguments at dial time).
    public let fingerprint: Fingerprint?
    public private(set) var arguments: BridgeArguments
    /// Problems that do not make the line unusable, in the order the rules found them.
    public private(set) var warnings: [BridgeArgumentProblem] = []

    public init(transport: TransportName, fingerprint: Fingerprint? = nil, arguments: BridgeArguments) {
        self.transport = transport
        self.fingerprint = fingerprint
        self.arguments = arguments
    }

    /// The value for `key`, or nil.
    public subscript(key: String) -> String? { arguments[key] }

    public mutating func warn(_ code: BridgeLineError.Code, key: String?, _ reason: String) {
        warnings.append(BridgeArgumentProblem(code, key: key, reason))
    }

    /// Replaces the value of `key` (which is in the arguments) by its canonical form.
    public mutating func normalize(_ key: String, to value: String) {
        arguments.replaceValue(forKey: key, with: value)
    }

    /// Warns about every argument whose key is not in `known`: it is kept and passed on.
    public mutating func warnAboutUnknownKeys(known: Set<String>) {
        for key in arguments.keys where !known.contains(key) {
            warn(.unknownArgument, key: key, "\(transport) does not use this argument; it is kept and passed on")
        }
    }
}

/// The argument rules of the transports an application knows, keyed by transport name.
///
/// Assembled explicitly by the application, one entry per transport (Postern's is
/// `Transports.argumentRules` in PosternRuntime). ``syntaxOnly`` knows no transport: every line with
/// a transport gets the `unknownTransport` warning, for code that checks only the grammar.
public struct BridgeArgumentRulebook: Sendable {
    private var rulesByTransport: [TransportName: any BridgeArgumentRules] = [:]

    /// A transport listed twice keeps its last rules.
    public init(_ rules: [any BridgeArgumentRules] = []) {
        for entry in rules { rulesByTransport[entry.transport] = entry }
    }

    /// No transport's rules: bridge-line grammar only.
    public static let syntaxOnly = BridgeArgumentRulebook()

    public func rules(for transport: TransportName) -> (any BridgeArgumentRules)? { rulesByTransport[transport] }

    /// The transports with rules, sorted.
    public var transports: [TransportName] { rulesByTransport.keys.sorted() }
}
