/// Per-bridge `key=value` arguments as they travel from tor to a PT (pt-spec §5).
///
/// Parsing follows goptlib/lyrebird: `\` escapes the next byte; the first unescaped `=` in a pair
/// separates key from value (later ones belong to the value, because tor does not escape `=`); an
/// unescaped `;` ends a pair. Parsing is lenient about what follows `\`. The description escapes
/// `\`, `;` and `=` (in keys and values), so `TransportArguments(parsing: args.description) == args`.
public struct TransportArguments: Hashable, Sendable, CustomStringConvertible {
    public struct Pair: Hashable, Sendable {
        public let key: String
        public let value: String
        public init(key: String, value: String) {
            self.key = key
            self.value = value
        }
    }

    /// Pairs in the order they were given; duplicate keys are kept.
    public let pairs: [Pair]

    public init(_ pairs: [Pair] = []) { self.pairs = pairs }

    public init(_ pairs: KeyValuePairs<String, String>) {
        self.pairs = pairs.map { Pair(key: $0.key, value: $0.value) }
    }

    /// The first value given for `key`.
    public subscript(key: String) -> String? { pairs.first { $0.key == key }?.value }

    /// Parses the escaped `k=v;k=v` form. The empty string means no arguments.
    public init(parsing text: String) throws(TransportError) {
        let bytes = Array(text.utf8)
        var pairs: [Pair] = []
        var key: [UInt8] = []
        var value: [UInt8] = []
        var sawSeparator = false
        var index = 0
        func fail(_ reason: String) -> TransportError {
            TransportError(code: .invalidArguments, kind: .invalidInput, message: "transport arguments: \(reason)")
        }
        guard !bytes.isEmpty else { self.pairs = []; return }
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail("the string ends with a lone '\\'") }
                if sawSeparator { value.append(bytes[index]) } else { key.append(bytes[index]) }
            case UInt8(ascii: "=") where !sawSeparator:
                guard !key.isEmpty else { throw fail("pair \(pairs.count + 1) has an empty key") }
                sawSeparator = true
            case UInt8(ascii: ";"):
                guard sawSeparator else { throw fail("pair \(pairs.count + 1) has a key with no value") }
                pairs.append(Pair(key: String(decoding: key, as: UTF8.self), value: String(decoding: value, as: UTF8.self)))
                key = []
                value = []
                sawSeparator = false
                guard index + 1 < bytes.count else { throw fail("the string ends with ';'") }
            default:
                if sawSeparator { value.append(byte) } else { key.append(byte) }
            }
            index += 1
        }
        guard sawSeparator else { throw fail("pair \(pairs.count + 1) has no '='") }
        pairs.append(Pair(key: String(decoding: key, as: UTF8.self), value: String(decoding: value, as: UTF8.self)))
        self.pairs = pairs
    }

    public var description: String {
        // By scalar, not by Character: "=" or ";" followed by a combining mark is one Character that
        // compares unequal to "=", yet its first byte is the separator the parser splits on.
        func escape(_ text: String) -> String {
            var out = String.UnicodeScalarView()
            for scalar in text.unicodeScalars {
                if scalar == "\\" || scalar == ";" || scalar == "=" { out.append("\\") }
                out.append(scalar)
            }
            return String(out)
        }
        return pairs.map { escape($0.key) + "=" + escape($0.value) }.joined(separator: ";")
    }

    /// The description with values replaced by `[scrubbed]`, safe for logs.
    public var scrubbedDescription: String {
        pairs.map { "\($0.key)=[scrubbed]" }.joined(separator: ";")
    }
}
