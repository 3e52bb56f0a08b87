import PosternSystem

/// One bridge: `[transport] address [fingerprint] [key=value ...]`, the grammar of tor's `Bridge`
/// option (pt-spec.md §6) without the `Bridge` keyword.
///
/// `description` is the canonical line and parses back (with the same rulebook) to an equal value.
/// It is not `LosslessStringConvertible`: reading a line needs the transports' argument rules
/// (`init(validating:rules:)`). The description contains secrets:
/// for logs and messages use `description(policy:)` or wrap the line in `Redacted`.
public struct BridgeLine: Hashable, Sendable, CustomStringConvertible, RedactableDescription {
    public let transport: TransportName
    public let address: BridgeAddress
    public let fingerprint: Fingerprint?
    public let arguments: BridgeArguments

    /// What makes two lines "the same bridge" for de-duplication.
    public struct Identity: Hashable, Sendable {
        public let transport: TransportName
        public let address: BridgeAddress
        public let fingerprint: Fingerprint?
    }

    public var identity: Identity { Identity(transport: transport, address: address, fingerprint: fingerprint) }

    /// Parses and validates one line, its arguments by `rules`; warnings are dropped (use
    /// `BridgeLine.parse` to see them).
    public init(validating text: String, rules: BridgeArgumentRulebook, logging: LoggingPolicy = .safe) throws(BridgeLineError) {
        self = try BridgeLine.parse(text, rules: rules, logging: logging).line
    }

    /// A line from parts already checked (the renderer swaps a host name for a placeholder IP).
    package init(transport: TransportName, address: BridgeAddress, fingerprint: Fingerprint?, arguments: BridgeArguments) {
        self.transport = transport
        self.address = address
        self.fingerprint = fingerprint
        self.arguments = arguments
    }

    public var description: String {
        var words: [String] = []
        if !transport.isVanilla { words.append(transport.rawValue) }
        words.append(address.description)
        if let fingerprint { words.append(fingerprint.hex) }
        words.append(contentsOf: arguments.map(\.description))
        return words.joined(separator: " ")
    }

    /// The line with address, fingerprint and secret argument values replaced by `[scrubbed]`
    /// unless `policy` allows unsafe logging.
    public func description(policy: LoggingPolicy) -> String {
        var words: [String] = []
        if !transport.isVanilla { words.append(transport.description(policy: policy)) }
        words.append(address.description(policy: policy))
        if let fingerprint { words.append(fingerprint.description(policy: policy)) }
        words.append(contentsOf: arguments.map { $0.description(policy: policy) })
        return words.joined(separator: " ")
    }

    /// The value of tor's `Bridge` option for this line.
    public var torrcLine: String { "Bridge \(description)" }

    /// A parsed line and the warnings about it (unknown transport, unused argument, ...).
    public struct Parsed: Hashable, Sendable {
        public let line: BridgeLine
        public let warnings: [BridgeLineWarning]
    }

    /// Parses one bridge line. An optional leading `Bridge` keyword (any case) is skipped. The
    /// arguments are checked by the rules `rules` has for the line's transport (a transport it
    /// does not know gets the `unknownTransport` warning). Errors name the word by its position in
    /// `text` (counting the keyword, as the user sees the line) and its kind, and show its text
    /// only under unsafe logging.
    public static func parse(_ text: String, rules: BridgeArgumentRulebook, logging: LoggingPolicy = .safe) throws(BridgeLineError) -> Parsed {
        var words = splitWords(text)
        var wordOffset = 0
        if let first = words.first, first.lowercased() == "bridge" {
            words.removeFirst()
            wordOffset = 1
        }
        var parser = LineParser(words: words, rulebook: rules, logging: logging, wordOffset: wordOffset)
        return try parser.run()
    }

    /// Splits on runs of spaces and tabs (the only separators tor knows in a config line).
    package static func splitWords(_ text: String) -> [String] {
        text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
    }
}

/// A word's label in messages: "word 3 (cert)", plus its text only under unsafe logging.
struct WordLabel {
    let logging: LoggingPolicy
    /// 1 when the line started with the `Bridge` keyword, which the parser has removed.
    let offset: Int

    /// `index` counts from 1 without the keyword; the label counts as the user wrote the line.
    func callAsFunction(_ index: Int, _ kind: String?, _ text: String) -> String {
        var label = "word \(index + offset)"
        switch (kind, logging.unsafeLogging) {
        case (let kind?, true): label += " (\(kind) \"\(text)\")"
        case (let kind?, false): label += " (\(kind))"
        case (nil, true): label += " (\"\(text)\")"
        case (nil, false): break
        }
        return label
    }
}

/// Keys are shown in messages only when they look like real argument names; a "key" made from a
/// pasted cert (`AbC...Q==`) must not leak.
func isPrintableKey(_ key: String) -> Bool {
    guard !key.isEmpty, key.utf8.count <= 24 else { return false }
    return key.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
}

private struct LineParser {
    let words: [String]
    let rulebook: BridgeArgumentRulebook
    let logging: LoggingPolicy
    let wordOffset: Int
    var warnings: [BridgeLineWarning] = []
    var label: WordLabel { WordLabel(logging: logging, offset: wordOffset) }

    init(words: [String], rulebook: BridgeArgumentRulebook, logging: LoggingPolicy, wordOffset: Int) {
        self.words = words
        self.rulebook = rulebook
        self.logging = logging
        self.wordOffset = wordOffset
    }

    func fail(_ code: BridgeLineError.Code, word: Int?, kind: String?, _ reason: String) -> BridgeLineError {
        let prefix = word.map { label($0, kind, words[$0 - 1]) + ": " } ?? ""
        return BridgeLineError(code: code, kind: .invalidInput, message: prefix + reason, word: word.map { $0 + wordOffset })
    }

    func wrap(_ error: BridgeLineError, word: Int, kind: String) -> BridgeLineError {
        BridgeLineError(code: error.code, kind: error.kind, message: "\(label(word, kind, words[word - 1])): \(error.message)", word: word + wordOffset)
    }

    mutating func warn(_ code: BridgeLineError.Code, word: Int?, kind: String?, _ reason: String) {
        let prefix = word.map { label($0, kind, words[$0 - 1]) + ": " } ?? ""
        warnings.append(BridgeLineWarning(code: code, message: prefix + reason))
    }

    /// "word 5 (cert): " when the problem's key is in the line; nothing for a missing key.
    func keyLabel(_ problem: BridgeArgumentProblem, _ wordOfKey: [String: Int]) -> String {
        guard let key = problem.key, let word = wordOfKey[key] else { return "" }
        return label(word, isPrintableKey(key) ? key : "argument", words[word - 1]) + ": "
    }

    mutating func run() throws(BridgeLineError) -> BridgeLine.Parsed {
        guard !words.isEmpty else {
            throw BridgeLineError(code: .emptyLine, kind: .invalidInput, message: "the bridge line is empty")
        }
        for (offset, word) in words.enumerated() where !word.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
            throw fail(.badCharacter, word: offset + 1, kind: nil, "contains a character that is not printable ASCII")
        }

        // 1. Transport: a C identifier in first position (tor's rule); anything else is the address.
        var next = 0
        var transport = TransportName.vanilla
        let first = words[0]
        if TransportName.isCIdentifier(first) {
            if first.lowercased() == "vanilla" {
                transport = .vanilla
            } else if let known = TransportName.known(matching: first) {
                transport = known
                if known.rawValue != first {
                    warn(.transportNameNormalized, word: 1, kind: "transport",
                         "transport name written as \(first); using \(known.rawValue)")
                }
            } else {
                transport = try TransportName(validating: first)
            }
            next = 1
        } else if words.count > 1, looksLikeMangledTransportName(first),
                  (try? BridgeAddress.parse(words[1], allowingHostName: true)) != nil {
            throw fail(.badTransportName, word: 1, kind: "transport",
                       "not a valid transport name (letters, digits and _, not starting with a digit)")
        }

        // 2. Address.
        guard next < words.count else {
            throw BridgeLineError(code: .missingAddress, kind: .invalidInput,
                                    message: "the line names the transport \(transport.description(policy: logging)) but has no address after it")
        }
        let addressWord = next + 1
        let rules = transport.isVanilla ? nil : rulebook.rules(for: transport)
        let allowsHostName = rules?.acceptsHostNameAddress ?? false
        let address: BridgeAddress
        do {
            let parsed = try BridgeAddress.parse(words[next], allowingHostName: allowsHostName)
            address = parsed.address
            if parsed.portWasMissing {
                warn(.defaultPort, word: addressWord, kind: "address", "no port given; tor uses 443")
            }
            if address.isHostName {
                warn(.hostNameAddress, word: addressWord, kind: "address",
                     "a host name instead of an IP address; \(transport) does not use it, and tor's configuration gets a placeholder IP instead")
            }
        } catch {
            var error = error
            if error.code == .hostNameNotAllowed {
                error = BridgeLineError(code: error.code, kind: error.kind,
                                          message: rules == nil
                                            ? "tor needs an IP address here, not a host name"
                                            : "\(transport) bridges need an IP address here, not a host name")
            }
            throw wrap(error, word: addressWord, kind: "address")
        }
        next += 1

        // 3. Fingerprint. Without a transport tor joins all remaining words (so a fingerprint
        //    written in groups of four is fine) and allows no arguments.
        var fingerprint: Fingerprint?
        if transport.isVanilla {
            let rest = words[next...]
            if let argumentOffset = rest.firstIndex(where: { $0.contains("=") }) {
                throw fail(.argumentsWithoutTransport, word: argumentOffset + 1, kind: "argument",
                           "a bridge line without a transport cannot have key=value arguments")
            }
            if !rest.isEmpty {
                do {
                    fingerprint = try Fingerprint(validating: rest.joined())
                } catch {
                    throw wrap(error, word: next + 1, kind: "fingerprint")
                }
            }
            next = words.count
        } else if next < words.count, !words[next].contains("=") {
            do {
                fingerprint = try Fingerprint(validating: words[next])
            } catch {
                throw wrap(error, word: next + 1, kind: "fingerprint")
            }
            next += 1
        }

        // 4. Arguments: every remaining word is key=value, '=' not first, keys unique.
        var elements: [BridgeArgument] = []
        var wordOfKey: [String: Int] = [:]
        while next < words.count {
            let word = words[next]
            let wordNumber = next + 1
            guard let equals = word.firstIndex(of: "=") else {
                throw fail(.badArgument, word: wordNumber, kind: "argument", "expected key=value")
            }
            let key = String(word[..<equals])
            let value = String(word[word.index(after: equals)...])
            guard !key.isEmpty else {
                throw fail(.badArgument, word: wordNumber, kind: "argument", "the key before = is empty")
            }
            // No transport's arguments have angle brackets; a word with one is markup (`</p>`)
            // copied with the line from a page or an email, whatever the transport.
            guard !word.contains(where: { $0 == "<" || $0 == ">" }) else {
                throw fail(.badArgument, word: wordNumber, kind: isPrintableKey(key) ? key : "argument",
                           "contains < or >, which no bridge argument has (HTML copied with the line?)")
            }
            if wordOfKey[key] != nil {
                let kind = isPrintableKey(key) ? key : "argument"
                let keyText = isPrintableKey(key) ? "\(key)" : "this key"
                throw fail(.duplicateArgument, word: wordNumber, kind: kind, "\(keyText) is given twice (first in word \(wordOfKey[key]! + wordOffset))")
            }
            wordOfKey[key] = wordNumber
            elements.append(BridgeArgument(key: key, value: value))
            next += 1
        }
        var arguments = BridgeArguments(unchecked: elements)

        // 5. The transport's own argument rules, from the rulebook.
        if let rules {
            var review = BridgeArgumentReview(transport: transport, fingerprint: fingerprint, arguments: arguments)
            do {
                try rules.review(&review)
            } catch {
                throw BridgeLineError(code: error.code, kind: .invalidInput, message: keyLabel(error, wordOfKey) + error.reason,
                                        word: error.key.flatMap { wordOfKey[$0] }.map { $0 + wordOffset })
            }
            arguments = review.arguments
            warnings.append(contentsOf: review.warnings.map { BridgeLineWarning(code: $0.code, message: keyLabel($0, wordOfKey) + $0.reason) })
        } else if !transport.isVanilla {
            warn(.unknownTransport, word: nil, kind: nil,
                 "the transport \(transport.description(policy: logging)) is not one Postern knows; its arguments were not checked and it needs a transport plugin of that name")
        }

        let encodedLength = arguments.socksArgumentString.utf8.count
        if encodedLength > BridgeArguments.maximumEncodedLength {
            throw BridgeLineError(code: .argumentsTooLong, kind: .invalidInput,
                                    message: "the arguments are \(encodedLength) bytes as tor sends them; tor accepts at most \(BridgeArguments.maximumEncodedLength)")
        }

        let line = BridgeLine(transport: transport, address: address, fingerprint: fingerprint, arguments: arguments)
        return BridgeLine.Parsed(line: line, warnings: warnings)
    }

    /// A first word that was meant as a transport name but is not a C identifier (`obfs-4`,
    /// `4obfs`), as opposed to an address.
    private func looksLikeMangledTransportName(_ word: String) -> Bool {
        guard !word.contains("."), !word.contains(":"), !word.contains("["), !word.contains("=") else { return false }
        return word.utf8.contains { ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) }
    }
}
