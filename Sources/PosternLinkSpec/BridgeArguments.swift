/// One `key=value` word of a bridge line. The key is everything before the first `=`; the value may
/// itself contain `=` (URLs with queries do) and may be empty (`fronts=` is meaningful to snowflake).
public struct BridgeArgument: Hashable, Sendable, CustomStringConvertible {
    public let key: String
    public let value: String

    public init(key: String, value: String) {
        self.key = key
        self.value = value
    }

    public var description: String { "\(key)=\(value)" }

    /// Keys whose values are harmless to log (they identify nothing about the bridge).
    static let nonSecretKeys: Set<String> = ["iat-mode", "ver", "max", "utls", "utls-imitate", "utls-nosni"]

    func description(policy: LoggingPolicy) -> String {
        if policy.unsafeLogging || Self.nonSecretKeys.contains(key) { return description }
        // A key is shown only if it looks like an argument name: a mangled paste can put an
        // address or a cert in front of an `=` (found by the fuzzer).
        let shownKey = isPrintableKey(key) ? key : LoggingPolicy.scrubbed
        return "\(shownKey)=\(LoggingPolicy.scrubbed)"
    }
}

/// The ordered `key=value` arguments of a bridge line. Keys are unique.
public struct BridgeArguments: Hashable, Sendable, CustomStringConvertible, RandomAccessCollection {
    public private(set) var elements: [BridgeArgument]

    /// Longest argument string tor accepts (after escaping `\` and `;` and joining with `;`).
    public static let maximumEncodedLength = 510

    public init() { elements = [] }

    /// Builds arguments from pairs; a repeated key is an error, as in a bridge line.
    public init(_ pairs: [(key: String, value: String)]) throws(BridgeLineError) {
        elements = []
        for pair in pairs {
            guard !pair.key.isEmpty, !pair.key.contains("=") else {
                throw BridgeLineError(code: .badArgument, kind: .invalidInput, message: "an argument key must be non-empty and contain no =")
            }
            guard self[pair.key] == nil else {
                throw BridgeLineError(code: .duplicateArgument, kind: .invalidInput, message: "the argument \(pair.key) is given twice")
            }
            elements.append(BridgeArgument(key: pair.key, value: pair.value))
        }
    }

    init(unchecked elements: [BridgeArgument]) { self.elements = elements }

    /// Builds arguments from pairs as a transport reads tor's SOCKS arguments: a repeated key
    /// keeps its first value (goptlib's `Args.Get`), later ones are dropped.
    public init(keepingFirstOf pairs: [(key: String, value: String)]) {
        var seen = Set<String>()
        elements = pairs.compactMap { pair in
            seen.insert(pair.key).inserted ? BridgeArgument(key: pair.key, value: pair.value) : nil
        }
    }

    public var startIndex: Int { elements.startIndex }
    public var endIndex: Int { elements.endIndex }
    public subscript(position: Int) -> BridgeArgument { elements[position] }

    /// The value for `key`, or nil.
    public subscript(key: String) -> String? {
        elements.first { $0.key == key }?.value
    }

    public var keys: [String] { elements.map(\.key) }

    public var description: String { elements.map(\.description).joined(separator: " ") }

    /// The string tor sends to the transport in the SOCKS username/password fields: each `k=v`
    /// with `\` and `;` escaped, joined by `;` (tor does not escape `=`).
    public var socksArgumentString: String {
        elements.map { element in
            // By scalar: ";" followed by a combining mark is one Character, but still the separator.
            var escaped = String.UnicodeScalarView()
            for scalar in element.description.unicodeScalars {
                if scalar == "\\" || scalar == ";" { escaped.append("\\") }
                escaped.append(scalar)
            }
            return String(escaped)
        }.joined(separator: ";")
    }

    mutating func replaceValue(forKey key: String, with value: String) {
        guard let index = elements.firstIndex(where: { $0.key == key }) else { return }
        elements[index] = BridgeArgument(key: key, value: value)
    }
}
