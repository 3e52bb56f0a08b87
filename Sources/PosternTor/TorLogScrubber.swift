/// Takes out of a tor log line everything that could identify a bridge, before the line reaches
/// tor.log.
///
/// SafeLogging is not enough: tor scrubs client addresses, but not OR connections whose identity it
/// knows (every bridge line with a fingerprint). Warnings on ordinary failure paths name the bridge:
/// "Problem bootstrapping ... host FINGERPRINT at ADDRESS:PORT" (control domain), "Proxy Client:
/// unable to connect ... RSA_ID=FINGERPRINT" (net), "We were supposed to connect to bridge ..."
/// (general), path-bias warnings about a guard "nickname ($FINGERPRINT)" (circ), directory replies
/// "from server ADDRESS:PORT" (dir). Filtering domains cannot keep up with that list, so every line
/// passes through here:
/// 1. every value the bridge lines gave tor becomes `[scrubbed]`: addresses, hosts, fingerprints,
///    PT argument values of six characters or more, any part of one that names a host (has a
///    letter and a dot), and the host inside a URL argument. Longest first, and before step 2, so
///    that a URL goes whole even where step 2 would split it (at '?', '@', '%').
/// 2. then every word that holds `[scrubbed]`, an IPv4 address (other than 0.0.0.0/8, which is
///    never a peer and is how tor's own version looks, "0.4.9.11"), an IPv6 address, or 40 or more
///    hex or base64 characters in a row (RSA fingerprints, ed25519 identities, certs) becomes
///    `[scrubbed]` whole, so "$FINGERPRINT~nickname" leaves nothing behind;
/// 3. a word right before "([scrubbed])" is a nickname ("Guard NICKNAME ($FINGERPRINT)") and goes.
/// Over-scrubbing is the chosen side: a path with 40 letters and slashes in a row goes too.
struct TorLogScrubber: Sendable {
    static let placeholder = "[scrubbed]"
    /// A PT argument value shorter than this is a setting (iat-mode=0, max=3), not an identifier.
    static let shortestSecretArgument = 6

    /// Literal secrets, longest first so that a host inside a URL goes after the URL.
    private(set) var secrets: [String] = []

    init(options: [TorOption] = []) {
        learn(options)
    }

    /// Adds the secrets of every `Bridge` option among `options`.
    mutating func learn(_ options: [TorOption]) {
        var found = Set(secrets)
        for option in options where option.key.lowercased() == "bridge" {
            for word in option.value.split(separator: " ") {
                Self.secrets(inBridgeWord: String(word)).forEach { found.insert($0) }
            }
        }
        secrets = found.sorted { $0.utf8.count != $1.utf8.count ? $0.utf8.count > $1.utf8.count : $0 < $1 }
    }

    /// What one word of a bridge line (transport, address, fingerprint or k=v argument) gives away.
    private static func secrets(inBridgeWord word: String) -> [String] {
        if let equals = word.firstIndex(of: "=") {
            let value = String(word[word.index(after: equals)...])
            var found: [String] = []
            for part in [value] + value.split(separator: ",").map(String.init) {
                let namesAHost = part.contains(".") && part.contains(where: { $0.isLetter })
                guard part.utf8.count >= shortestSecretArgument || namesAHost else { continue }
                found.append(part)
                if let host = urlHost(part) { found += [host.withPort, host.name].filter { !$0.isEmpty } }
            }
            return found
        }
        // A transport name has neither a dot nor a colon; an address or a fingerprint is secret.
        if word.contains(":") || word.contains(".") {
            return [word, hostOfAddress(word)].filter { !$0.isEmpty }
        }
        if word.utf8.count == 40, word.utf8.allSatisfy(isHexDigit) { return [word] }
        return []
    }

    /// "host:port" → "host"; "[v6]:port" → "v6".
    private static func hostOfAddress(_ address: String) -> String {
        if address.hasPrefix("["), let close = address.firstIndex(of: "]") {
            return String(address[address.index(after: address.startIndex)..<close])
        }
        if let colon = address.lastIndex(of: ":"), address.firstIndex(of: ":") == colon {
            return String(address[..<colon])
        }
        return address
    }

    /// The authority of "scheme://authority/path" or "stun:host:port", with and without its port.
    private static func urlHost(_ value: String) -> (withPort: String, name: String)? {
        let rest: Substring
        if let schemeEnd = value.range(of: "://") {
            rest = value[schemeEnd.upperBound...]
        } else if let colon = value.firstIndex(of: ":"), value[..<colon].allSatisfy({ $0.isASCII && $0.isLetter }) {
            rest = value[value.index(after: colon)...]
        } else {
            return nil
        }
        let authority = String(rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" })
        let withoutUser = authority.split(separator: "@").last.map(String.init) ?? authority
        guard !withoutUser.isEmpty else { return nil }
        return (withoutUser, hostOfAddress(withoutUser))
    }

    /// The line, scrubbed in the three steps above. tor's timestamp and severity
    /// ("Dec 05 15:34:32.000 [warn]") hold nothing that any step takes.
    func scrub(_ line: String) -> String {
        var scrubbed = line
        for secret in secrets where scrubbed.contains(secret) {
            scrubbed = scrubbed.replacing(secret, with: Self.placeholder)
        }
        return Self.scrubIdentifyingWords(scrubbed)
    }

    /// Characters that make up an address, fingerprint or identity "word"; anything else ends one.
    private static func isWordByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return ".:[]$~+/=_-".utf8.contains(byte)
        }
    }

    private static let placeholderBytes = Array(placeholder.utf8)
    /// What follows a nickname in tor's "NICKNAME ($FINGERPRINT)", once the fingerprint is scrubbed.
    private static let nicknameFollower = Array(" (\(placeholder))".utf8)

    private static func scrubIdentifyingWords(_ message: String) -> String {
        let bytes = Array(message.utf8)
        // The line as words and the bytes between them; a word is kept as its range in `bytes`.
        var pieces: [(isWord: Bool, bytes: ArraySlice<UInt8>)] = []
        var index = 0
        while index < bytes.count {
            var end = index + 1
            let isWord = isWordByte(bytes[index])
            while end < bytes.count && isWordByte(bytes[end]) == isWord { end += 1 }
            let piece = bytes[index..<end]
            pieces.append(isWord && identifies(piece) ? (true, placeholderBytes[...]) : (isWord, piece))
            index = end
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        for (position, piece) in pieces.enumerated() {
            // A word followed by " ([scrubbed])": the separator " (" and the placeholder word.
            if piece.isWord, position + 3 < pieces.count,
               Array(pieces[position + 1].bytes) + pieces[position + 2].bytes + pieces[position + 3].bytes.prefix(1) == nicknameFollower {
                output += placeholderBytes
            } else {
                output += piece.bytes
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    static func identifies(_ word: ArraySlice<UInt8>) -> Bool {
        containsPlaceholder(word) || longestRun(in: word, of: isBase64Byte) >= 40 || containsIPv4(word) || containsIPv6(word)
    }

    private static func containsPlaceholder(_ word: ArraySlice<UInt8>) -> Bool {
        guard word.count >= placeholderBytes.count else { return false }
        return word.indices.dropLast(placeholderBytes.count - 1).contains { start in
            word[start..<(start + placeholderBytes.count)].elementsEqual(placeholderBytes)
        }
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): true
        default: false
        }
    }

    private static func isBase64Byte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"): true
        default: false
        }
    }

    private static func longestRun(in word: ArraySlice<UInt8>, of member: (UInt8) -> Bool) -> Int {
        var longest = 0, current = 0
        for byte in word {
            current = member(byte) ? current + 1 : 0
            longest = max(longest, current)
        }
        return longest
    }

    /// Four dot-separated decimal numbers of at most three digits each, anywhere in the word, the
    /// first not 0 (0.0.0.0/8 is never a peer; tor's version "0.4.9.11" has that shape).
    private static func containsIPv4(_ word: ArraySlice<UInt8>) -> Bool {
        // Pieces of digits and dots, split at anything else.
        for piece in word.split(whereSeparator: { !($0 == UInt8(ascii: ".") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)) }) {
            let numbers = piece.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
            guard numbers.count >= 4 else { continue }
            // Any four consecutive numbers of 1-3 digits.
            for start in 0...(numbers.count - 4) {
                let quad = numbers[start..<(start + 4)]
                guard quad.allSatisfy({ (1...3).contains($0.count) }) else { continue }
                if quad.first.map({ Array($0) != [UInt8(ascii: "0")] }) ?? false { return true }
            }
        }
        return false
    }

    /// Hex groups and colons with "::" or at least seven colons (a full address); a time of day
    /// ("15:34:32") has two colons and no "::".
    private static func containsIPv6(_ word: ArraySlice<UInt8>) -> Bool {
        for piece in word.split(whereSeparator: { !($0 == UInt8(ascii: ":") || isHexDigit($0)) }) {
            let colons = piece.lazy.filter { $0 == UInt8(ascii: ":") }.count
            guard colons >= 2 else { continue }
            let array = Array(piece)
            let hasDoubleColon = zip(array, array.dropFirst()).contains { $0 == UInt8(ascii: ":") && $1 == UInt8(ascii: ":") }
            if hasDoubleColon || colons >= 7 { return true }
        }
        return false
    }
}
