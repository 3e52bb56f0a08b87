import PosternLinkSpec
import PosternSystem

/// Where a line came from in a paste: its physical line, and for the JSON-array form the 1-based
/// position of the string in the array (then messages say "entry N").
public struct PasteLocation: Hashable, Sendable, CustomStringConvertible {
    public let line: Int
    public let entry: Int?

    public init(line: Int, entry: Int? = nil) {
        self.line = line
        self.entry = entry
    }

    public var description: String { entry.map { "entry \($0)" } ?? "line \(line)" }
}

/// The result of reading whatever a user pasted: bridge lines one per line (with or without the
/// `Bridge` keyword), a torrc fragment, or the JSON array shared in QR codes.
///
/// Every line is judged on its own: a bad line becomes one error in `rejected` (naming the line,
/// the word and the reason) and never stops the good lines from being accepted.
public struct BridgePaste: Hashable, Sendable {
    public struct Accepted: Hashable, Sendable {
        public let location: PasteLocation
        public let line: BridgeLine
    }

    public private(set) var accepted: [Accepted] = []
    public private(set) var rejected: [BridgeConfigError] = []
    /// Things that are probably worth a look (unknown transport, host-name address, ...).
    public private(set) var warnings: [BridgeConfigDiagnostic] = []
    /// Input that was deliberately skipped (torrc options other than `Bridge`).
    public private(set) var notes: [BridgeConfigDiagnostic] = []

    /// A `ClientTransportPlugin NAME exec PATH ARGS` line: an external transport the paste offers.
    /// Never stored by parsing; the caller asks the user (or is told to accept them).
    public struct PluginOffer: Hashable, Sendable {
        public let location: PasteLocation
        public let plugin: TransportPlugin
    }

    public private(set) var pluginOffers: [PluginOffer] = []

    /// True when the paste held neither a bridge line nor anything that looked like one.
    public var isEmpty: Bool { accepted.isEmpty && rejected.isEmpty }

    public var lines: [BridgeLine] { accepted.map(\.line) }

    /// Reads a paste, checking each line's arguments by `rules`. Never throws: problems are
    /// reported per line in the result.
    ///
    /// Before the lines are read, characters nobody sees are removed (``PasteCharacters``), and the
    /// HTML source of a page or message is read as its text (``HTMLPasteText``). A bridge line a
    /// mail client wrapped over several lines is read whole (see `readLines`).
    public static func parse(_ text: String, rules: BridgeArgumentRulebook, logging: LoggingPolicy = .safe) -> BridgePaste {
        var paste = BridgePaste()
        var normalized = PasteCharacters.removingInvisibles(PasteCharacters.unifyingLineEnds(text))
        if normalized.hasPrefix("\u{FEFF}") { normalized.removeFirst() }

        let reader = LineReader(rules: rules, logging: logging)
        var firstSeen: [BridgeLine.Identity: PasteLocation] = [:]
        switch JSONListReader.read(normalized) {
        case .notAList:
            let lines = HTMLPasteText.lines(of: normalized)
                ?? normalized.split(separator: "\n", omittingEmptySubsequences: false).enumerated().map { ($0 + 1, String($1)) }
            paste.readLines(lines.map { (PasteLocation(line: $0.line), $0.text) }, reader: reader, firstSeen: &firstSeen)
        case .list(let entries):
            // Each string is one line as the list's author meant it: never joined with another.
            for (offset, entry) in entries.enumerated() {
                let location = PasteLocation(line: entry.line, entry: offset + 1)
                paste.record(reader.verdict(on: entry.text, at: location), at: location, firstSeen: &firstSeen)
            }
        case .malformed(let line, let reason):
            paste.rejected.append(BridgeConfigError(
                code: .badJSON, kind: .invalidInput,
                message: "line \(line): the paste looks like a list of bridge lines ([\"...\", \"...\"]) but \(reason)",
                location: PasteLocation(line: line)))
        }
        return paste
    }

    /// The most lines one bridge line is read from when a mail client wrapped it: an obfs4 line
    /// wrapped at 72 columns takes three, a snowflake line with its ice= list five, and a narrow
    /// phone screen a few more.
    static let maximumWrappedPieces = 8

    /// Reads the lines of a paste, joining the pieces of a bridge line a mail client wrapped.
    ///
    /// A line that is not a valid bridge line on its own is joined with the lines after it when
    /// the joined text is one. The lines after it must not be valid bridge lines either, and must
    /// be broken bridge-line text: a blank line, a comment, prose, a torrc option or a line that
    /// starts a new bridge line (the `Bridge` keyword or a transport's name) ends the search. So
    /// two valid lines are never joined, and prose never becomes part of a bridge. A valid line
    /// takes only following lines made of nothing but key=value words (which are never a bridge
    /// line by themselves): a webtunnel or snowflake line wrapped after its url= is valid without
    /// the ver=, fronts= or ice= that follow. Of the joins that work the longest is taken (the last
    /// piece can be an optional argument). The bridge's location is its first line.
    private mutating func readLines(_ lines: [(location: PasteLocation, text: String)], reader: LineReader,
                                    firstSeen: inout [BridgeLine.Identity: PasteLocation]) {
        let verdicts = lines.map { reader.verdict(on: $0.text, at: $0.location) }
        var index = 0
        while index < lines.count {
            let takesOnlyArguments: Bool
            switch verdicts[index] {
            case .invalid: takesOnlyArguments = false
            case .bridge: takesOnlyArguments = true
            default:
                record(verdicts[index], at: lines[index].location, firstSeen: &firstSeen)
                index += 1
                continue
            }
            var joined: (last: Int, parsed: BridgeLine.Parsed)?
            var text = lines[index].text
            var next = index + 1
            while next < lines.count, next - index < Self.maximumWrappedPieces,
                  case .invalid = verdicts[next], !reader.startsBridgeLine(lines[next].text),
                  !takesOnlyArguments || Self.isArgumentsOnly(lines[next].text) {
                text += " " + lines[next].text
                if case .bridge(let parsed) = reader.verdict(on: text, at: lines[index].location) {
                    joined = (next, parsed)
                }
                next += 1
            }
            if let joined {
                record(.bridge(joined.parsed), at: lines[index].location, firstSeen: &firstSeen)
                index = joined.last + 1
            } else {
                record(verdicts[index], at: lines[index].location, firstSeen: &firstSeen)
                index += 1
            }
        }
    }

    /// True for a line of key=value words only.
    private static func isArgumentsOnly(_ raw: String) -> Bool {
        guard let words = words(of: raw) else { return false }
        return words.allSatisfy { word in word.contains("=") && !word.hasPrefix("=") }
    }

    /// Adds what a line turned out to be to the result.
    private mutating func record(_ verdict: LineVerdict, at location: PasteLocation,
                                 firstSeen: inout [BridgeLine.Identity: PasteLocation]) {
        switch verdict {
        case .skipped:
            return
        case .note(let note):
            notes.append(note)
        case .pluginLine(let words):
            readPluginLine(words, at: location)
        case .invalid(let error):
            rejected.append(error.located(at: location))
        case .bridge(let parsed):
            warnings.append(contentsOf: parsed.warnings.map { BridgeConfigDiagnostic($0).located(at: location) })
            if let earlier = firstSeen[parsed.line.identity] {
                warnings.append(BridgeConfigDiagnostic(code: .duplicateLine,
                    message: "\(location): the same bridge as \(earlier); skipped", location: location))
                return
            }
            firstSeen[parsed.line.identity] = location
            accepted.append(Accepted(location: location, line: parsed.line))
        }
    }

    /// torrc options people leave in a pasted fragment. Recognized so that they are skipped with a
    /// note instead of being misread as a transport name.
    static let otherTorrcOptions: Set<String> = [
        "socksport", "controlport", "datadirectory", "log", "geoipfile", "geoipv6file", "clientonly",
        "exitnodes", "entrynodes", "excludenodes", "excludeexitnodes", "strictnodes", "sandbox",
        "avoiddiskwrites", "cookieauthentication", "hashedcontrolpassword", "safelogging",
        "updatebridgesfromauthority", "clientuseipv6", "clientpreferipv6orport", "httpsproxy",
        "socks5proxy", "socks4proxy", "transport", "dnsport", "runasdaemon",
    ]

    /// What one line of a paste is, judged on its own.
    enum LineVerdict {
        /// Blank or a comment.
        case skipped
        /// A torrc option or prose: skipped with this note.
        case note(BridgeConfigDiagnostic)
        /// `ClientTransportPlugin`, with the words after it.
        case pluginLine([String])
        case bridge(BridgeLine.Parsed)
        /// Meant as a bridge line, but not a valid one.
        case invalid(BridgeConfigError)
    }

    /// Judges single lines (or joined pieces of one) by a rulebook; no state of its own.
    struct LineReader {
        let rules: BridgeArgumentRulebook
        let logging: LoggingPolicy

        func verdict(on raw: String, at location: PasteLocation) -> LineVerdict {
            guard var words = BridgePaste.words(of: raw) else { return .skipped }
            var hadBridgeKeyword = false
            if let first = words.first, first.lowercased() == "bridge" {
                words.removeFirst()
                hadBridgeKeyword = true
            }
            if !hadBridgeKeyword, let option = words.first?.lowercased() {
                if option == "usebridges" {
                    return .note(BridgeConfigDiagnostic(code: .torrcOptionIgnored,
                        message: "\(location): UseBridges is ignored; Postern turns bridges on by itself", location: location))
                }
                if option == "clienttransportplugin" {
                    return .pluginLine(Array(words.dropFirst()))
                }
                if BridgePaste.otherTorrcOptions.contains(option),
                   TransportName.known(matching: option) == nil {
                    return .note(BridgeConfigDiagnostic(code: .torrcOptionIgnored,
                        message: "\(location): the torrc option \(words[0]) is not a bridge line; ignored", location: location))
                }
            }

            if !hadBridgeKeyword, BridgePaste.isProse(words) {
                return .note(BridgeConfigDiagnostic(code: .proseSkipped,
                    message: "\(location): not a bridge line (text around the bridges?); skipped", location: location))
            }

            do throws(BridgeLineError) {
                return .bridge(try BridgeLine.parse(((hadBridgeKeyword ? ["Bridge"] : []) + words).joined(separator: " "),
                                                    rules: rules, logging: logging))
            } catch {
                return .invalid(BridgeConfigError(error))
            }
        }

        /// True when `raw` begins the way a bridge line does: with the `Bridge` keyword or the name
        /// of a transport Postern knows. Such a line is never the continuation of a wrapped one.
        func startsBridgeLine(_ raw: String) -> Bool {
            guard let first = BridgePaste.words(of: raw)?.first else { return false }
            return first.lowercased() == "bridge" || TransportName.known(matching: first) != nil
        }
    }

    /// The words of a pasted line, after quotes and a trailing comment are taken off; nil for a
    /// blank line or a comment.
    static func words(of raw: String) -> [String]? {
        var text = trim(Substring(PasteCharacters.removingInvisibles(raw)))
        if text.isEmpty || text.hasPrefix("#") || text.hasPrefix("//") { return nil }
        text = stripQuotes(text)
        text = stripTrailingComment(text)
        if text.isEmpty { return nil }

        // Text copied from web pages and chat apps carries no-break and other Unicode spaces
        // between words; tor only knows spaces and tabs.
        let spaced = String(text.map { $0.isWhitespace && $0 != "\t" ? " " : $0 })
        return BridgeLine.splitWords(spaced)
    }

    /// A line of the message around the bridge lines, as people receive them by mail or from a bot
    /// ("Hi! Here are the bridges you asked for:"): no `Bridge` keyword, a first word that names no
    /// transport, and none of what a bridge line is made of (an address with a port, a 40-digit
    /// fingerprint, a key=value argument). Such a line is skipped with a note rather than rejected
    /// word by word; anything that has one of those parts is still read as a bridge line, so a
    /// damaged bridge line gets its precise error.
    static func isProse(_ words: [String]) -> Bool {
        guard let first = words.first, TransportName.known(matching: first) == nil else { return false }
        return !words.contains { word in
            word.contains("=") || (word.contains(":") && word.contains(where: \.isNumber))
                || (word.count == 40 && word.allSatisfy(\.isHexDigit))
        }
    }

    /// `ClientTransportPlugin NAME[,NAME] exec PATH [ARGS]` becomes an offer; the `socks4`/`socks5`
    /// forms (a proxy someone started by hand) and malformed lines are skipped with a note that
    /// says why, without echoing the words.
    private mutating func readPluginLine(_ words: [String], at location: PasteLocation) {
        func skip(_ reason: String) {
            notes.append(BridgeConfigDiagnostic(code: .torrcOptionIgnored,
                message: "\(location): ClientTransportPlugin is ignored: \(reason)", location: location))
        }
        guard words.count >= 3 else { return skip("it needs NAME exec PATH") }
        let mode = words[1].lowercased()
        guard mode == "exec" else {
            return skip(mode == "socks4" || mode == "socks5"
                        ? "Postern starts and runs its transports itself; a proxy started by hand is not used"
                        : "the second word must be exec")
        }
        do throws(BridgeConfigError) {
            let plugin = try TransportPlugin(names: try TransportPlugin.names(parsing: words[0]), executable: words[2],
                                             arguments: Array(words.dropFirst(3)))
            pluginOffers.append(PluginOffer(location: location, plugin: plugin))
        } catch {
            skip(error.message)
        }
    }

    private static func isBlank(_ character: Character) -> Bool {
        character.isWhitespace || character == "\u{FEFF}"
    }

    private static func trim(_ text: Substring) -> Substring {
        var text = text
        while let first = text.first, isBlank(first) { text.removeFirst() }
        while let last = text.last, isBlank(last) { text.removeLast() }
        return text
    }

    private static let openingQuotes: [Character: Set<Character>] = [
        "\"": ["\""], "'": ["'"], "\u{201C}": ["\u{201D}", "\u{201C}"], "\u{2018}": ["\u{2019}", "\u{2018}"],
        "`": ["`"],
    ]

    /// `"obfs4 ..."`, `'obfs4 ...'`, typographic quotes, and a trailing comma after the closing
    /// quote (one element of a JSON array pasted on its own line).
    private static func stripQuotes(_ text: Substring) -> Substring {
        guard let first = text.first, let closers = openingQuotes[first] else { return text }
        var body = text.dropFirst()
        if body.last == "," { body = trim(body.dropLast()) }
        if let last = body.last, closers.contains(last) { body = body.dropLast() }
        return trim(body)
    }

    /// ` # comment` or ` // comment` after the line. Only when preceded by blank space, so URLs
    /// (`https://`) and values are never cut.
    private static func stripTrailingComment(_ text: Substring) -> Substring {
        var previousWasBlank = false
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if previousWasBlank {
                if character == "#" { return trim(text[..<index]) }
                if character == "/", text[index...].hasPrefix("//") { return trim(text[..<index]) }
            }
            previousWasBlank = character == " " || character == "\t"
            index = text.index(after: index)
        }
        return text
    }
}

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        guard contains(target) else { return self }
        return components(separatedBy: target).joined(separator: replacement)
    }

    private func components(separatedBy separator: String) -> [String] {
        var parts: [String] = []
        var rest = Substring(self)
        while let range = rest.range(of: separator) {
            parts.append(String(rest[..<range.lowerBound]))
            rest = rest[range.upperBound...]
        }
        parts.append(String(rest))
        return parts
    }
}

extension Substring {
    func range(of target: String) -> Range<Index>? {
        guard !target.isEmpty else { return nil }
        var index = startIndex
        while index < endIndex {
            if self[index...].hasPrefix(target) {
                return index..<self.index(index, offsetBy: target.count)
            }
            index = self.index(after: index)
        }
        return nil
    }
}

/// Reads the array-of-strings form (`["obfs4 ...", "obfs4 ..."]`, also with single quotes as some
/// QR generators write it). Hand-written so a malformed list gets a precise reason and a line
/// number, and so the strings' contents never appear in the message.
enum JSONListReader {
    enum Outcome {
        case notAList
        case list([(line: Int, text: String)])
        case malformed(line: Int, reason: String)
    }

    static func read(_ text: String) -> Outcome {
        let characters = Array(text)
        var index = 0
        var line = 1
        func skipBlank() {
            while index < characters.count, characters[index].isWhitespace {
                if characters[index] == "\n" { line += 1 }
                index += 1
            }
        }
        skipBlank()
        guard index < characters.count, characters[index] == "[" else { return .notAList }
        // `[2001:db8::1]:443` starts with a bracket too; a list has a quote or `]` next.
        var peek = index + 1
        while peek < characters.count, characters[peek].isWhitespace { peek += 1 }
        guard peek < characters.count, ["\"", "'", "]"].contains(characters[peek]) else { return .notAList }
        index += 1

        var entries: [(line: Int, text: String)] = []
        while true {
            skipBlank()
            guard index < characters.count else { return .malformed(line: line, reason: "the closing ] is missing") }
            if characters[index] == "]" { index += 1; break }
            let quote = characters[index]
            guard quote == "\"" || quote == "'" else {
                return .malformed(line: line, reason: "an element is not a quoted string")
            }
            let startLine = line
            index += 1
            var value = ""
            var closed = false
            while index < characters.count {
                let character = characters[index]
                index += 1
                if character == quote { closed = true; break }
                if character == "\n" { line += 1 }
                guard character == "\\" else { value.append(character); continue }
                guard index < characters.count else { break }
                let escaped = characters[index]
                index += 1
                switch escaped {
                case "n": value.append("\n")
                case "t": value.append("\t")
                case "r": value.append("\r")
                case "b", "f": value.append(" ")
                case "u":
                    guard index + 4 <= characters.count,
                          let code = UInt32(String(characters[index..<index + 4]), radix: 16),
                          let scalar = Unicode.Scalar(code) else {
                        return .malformed(line: line, reason: "a \\u escape is not four hexadecimal digits")
                    }
                    value.unicodeScalars.append(scalar)
                    index += 4
                default: value.append(escaped)
                }
            }
            guard closed else { return .malformed(line: startLine, reason: "a string is not closed") }
            entries.append((startLine, value))
            skipBlank()
            guard index < characters.count else { return .malformed(line: line, reason: "the closing ] is missing") }
            if characters[index] == "," { index += 1; continue }
            if characters[index] == "]" { index += 1; break }
            return .malformed(line: line, reason: "expected , or ] after a string")
        }
        skipBlank()
        guard index == characters.count else {
            return .malformed(line: line, reason: "there is text after the closing ]")
        }
        return .list(entries)
    }
}

extension BridgeConfigError.Code {
    /// A pasted line that is prose, not a bridge line (a note).
    public static let proseSkipped = Self("prose-skipped")
}
