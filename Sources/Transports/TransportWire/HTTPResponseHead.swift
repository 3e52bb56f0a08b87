// HTTP/1.1 response head (RFC 9112, sections 2.2, 4 and 5), as the one reader every transport uses
// (the webtunnel upgrade, the snowflake broker and AMP cache, the WebSocket opening handshake):
//
//   status-line  = HTTP-version SP status-code [ SP reason-phrase ] line-end
//   HTTP-version = "HTTP/" DIGIT "." DIGIT
//   status-code  = 3DIGIT
//   field-line   = field-name ":" OWS field-value OWS line-end    (field-name a token)
//   head         = status-line *( field-line ) line-end
//   line-end     = CRLF, or a bare LF (section 2.2 lets a recipient accept it; Go's textproto,
//                  which the reference clients use, does)
//
// Refused as malformed: no status line (an empty first line), a version that is not HTTP/x.y, a
// status code that is not exactly three digits followed by SP or the line end, a field line without
// a colon or whose name is not a token (which also refuses obs-fold, a line starting with SP or
// HTAB). Field values are kept as bytes with OWS trimmed; what a value must be is the caller's.
//
// Hostile input: no byte traps, and memory stays within the caps, which are the strictest of the
// readers this one replaced: the head (status line and field lines, without the blank line and the
// line end before it) at most `maximumHeadBytes` (16 KiB), at most `maximumFieldCount` (100) field
// lines, a line at most `maximumLineBytes` (8 KiB). Each is checked as bytes arrive, so the reader
// holds at most the head cap plus 3 bytes plus one read; a head not ended by then is refused, never
// buffered further. The verdict does not depend on how the bytes are split into reads. The reader
// does no I/O: the wait for the head is bounded by its caller's deadline (webtunnel's handshake
// timeout, the broker's exchange deadline, the WebSocket connect timeout).

/// One field line of a response head.
public struct HTTPField: Sendable, Equatable {
    /// The name as sent (a token).
    public let name: [UInt8]
    /// The value, without leading and trailing spaces and tabs.
    public let value: [UInt8]

    /// Whether the name is `lowercaseName`, ASCII case-insensitively.
    public func hasName(_ lowercaseName: String) -> Bool { HTTPResponseHead.equalsIgnoringCase(name, lowercaseName) }
}

/// A parsed response head.
public struct HTTPResponseHead: Sendable, Equatable {
    /// The status line as sent (without its line end): the peer's bytes, for messages shown escaped.
    public let statusLine: [UInt8]
    public let status: Int
    /// What follows the status code and its SP (empty when the line ends after the code).
    public let reason: [UInt8]
    public let fields: [HTTPField]

    /// The first value of the field `lowercaseName` (as Go's Header.Get), nil when absent.
    public func value(_ lowercaseName: String) -> [UInt8]? { fields.first { $0.hasName(lowercaseName) }?.value }

    /// Whether the first value of `lowercaseName` is `lowercaseExpected`, ASCII case-insensitively.
    public func value(_ lowercaseName: String, is lowercaseExpected: String) -> Bool {
        value(lowercaseName).map { Self.equalsIgnoringCase($0, lowercaseExpected) } ?? false
    }

    /// ASCII case-insensitive comparison with a lowercase literal.
    public static func equalsIgnoringCase<C: Collection<UInt8>>(_ bytes: C, _ lowercase: String) -> Bool {
        let expected = Array(lowercase.utf8)
        guard bytes.count == expected.count else { return false }
        return zip(bytes, expected).allSatisfy { pair in
            let byte = pair.0
            return (byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) == pair.1
        }
    }
}

/// Reads a response head from bytes in any split: the head and what followed it once the blank
/// line has arrived, nil while more is needed, a typed error (`http-malformed`, `http-too-large`)
/// otherwise. Pure, so the fuzz targets drive it with arbitrary reads.
public struct HTTPHeadReader: Sendable {
    public static let maximumHeadBytes = 16 * 1024
    public static let maximumFieldCount = 100
    public static let maximumLineBytes = 8 * 1024

    /// The caps in force (the defaults above; fuzz targets pass small ones to reach them).
    public let headLimit: Int
    public let fieldCountLimit: Int
    public let lineLimit: Int

    private var buffer: [UInt8] = []
    /// Bytes examined so far.
    private var scanned = 0
    private var lineStart = 0
    /// The content of each complete line (without its line end).
    private var lines: [Range<Int>] = []

    public init(headLimit: Int = maximumHeadBytes, fieldCountLimit: Int = maximumFieldCount,
                lineLimit: Int = maximumLineBytes) {
        self.headLimit = max(1, headLimit)
        self.fieldCountLimit = max(0, fieldCountLimit)
        self.lineLimit = max(1, lineLimit)
    }

    /// The bytes held (never more than the head cap plus 3 plus the last read).
    public var bufferedCount: Int { buffer.count }

    /// Feeds one read; once the head has ended, the head and the bytes after it (later calls are
    /// not expected).
    public mutating func append(_ bytes: some Collection<UInt8>) throws(WireError) -> (head: HTTPResponseHead, remainder: [UInt8])? {
        buffer.append(contentsOf: bytes)
        while scanned < buffer.count {
            guard buffer[scanned] == 0x0A else {
                scanned += 1
                continue
            }
            let contentEnd = scanned > lineStart && buffer[scanned - 1] == 0x0D ? scanned - 1 : scanned
            scanned += 1
            if contentEnd == lineStart {
                // The blank line (or an empty first line, which parse refuses as no status line).
                let headLength = lines.last?.upperBound ?? 0
                guard headLength <= headLimit else { throw Self.tooLarge("the head is longer than \(headLimit) bytes") }
                let head = try Self.parse(buffer, lines: lines)
                return (head, Array(buffer[scanned...]))
            }
            guard contentEnd - lineStart <= lineLimit else { throw Self.tooLarge("a line is longer than \(lineLimit) bytes") }
            lines.append(lineStart..<contentEnd)
            guard lines.count <= fieldCountLimit + 1 else { throw Self.tooLarge("more than \(fieldCountLimit) header lines") }
            lineStart = scanned
        }
        // No blank line yet. A line whose content (at most one CR of it is not content) is already
        // over the cap, or a head that can no longer end within its cap (its last line end and the
        // blank line take at most 4 bytes), is refused now: the verdict is the same in any split.
        guard buffer.count - lineStart <= lineLimit + 1 else { throw Self.tooLarge("a line is longer than \(lineLimit) bytes") }
        guard buffer.count < headLimit + 4 else { throw Self.tooLarge("the head has not ended within \(headLimit) bytes") }
        return nil
    }

    /// A whole response at once: the head and what follows it, nil when the head has not ended.
    public static func parse(_ bytes: [UInt8], headLimit: Int = maximumHeadBytes, fieldCountLimit: Int = maximumFieldCount,
                             lineLimit: Int = maximumLineBytes) throws(WireError) -> (head: HTTPResponseHead, remainder: [UInt8])? {
        var reader = HTTPHeadReader(headLimit: headLimit, fieldCountLimit: fieldCountLimit, lineLimit: lineLimit)
        return try reader.append(bytes)
    }

    private static func tooLarge(_ what: String) -> WireError {
        WireError(code: .httpTooLarge, kind: .protocolViolation, message: what)
    }

    private static func malformed(_ what: String) -> WireError {
        WireError(code: .httpMalformed, kind: .protocolViolation, message: what)
    }

    private static func parse(_ buffer: [UInt8], lines: [Range<Int>]) throws(WireError) -> HTTPResponseHead {
        guard let first = lines.first else { throw malformed("an empty answer") }
        let statusLine = buffer[first]
        guard let space = statusLine.firstIndex(of: 0x20) else { throw malformed("a status line without a space") }
        let version = statusLine[..<space]
        guard version.count == 8, version.starts(with: Array("HTTP/".utf8)), isDigit(version[version.startIndex + 5]),
              version[version.startIndex + 6] == UInt8(ascii: "."), isDigit(version[version.startIndex + 7]) else {
            throw malformed("a status line that does not start with HTTP/x.y")
        }
        let afterVersion = statusLine[(space + 1)...]
        let digits = afterVersion.prefix(3)
        guard digits.count == 3, digits.allSatisfy(isDigit),
              afterVersion.count == 3 || afterVersion[afterVersion.startIndex + 3] == 0x20 else {
            throw malformed("a status line without a status code")
        }
        let status = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        var fields: [HTTPField] = []
        fields.reserveCapacity(lines.count - 1)
        for range in lines.dropFirst() {
            let line = buffer[range]
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { throw malformed("a header line without ':'") }
            let name = line[..<colon]
            // A token: no spaces, so a leading space (obs-fold) is refused too.
            guard !name.isEmpty, name.allSatisfy(isTokenByte) else { throw malformed("a header name that is not a token") }
            var value = line[(colon + 1)...]
            while let byte = value.first, byte == 0x20 || byte == 0x09 { value = value.dropFirst() }
            while let byte = value.last, byte == 0x20 || byte == 0x09 { value = value.dropLast() }
            fields.append(HTTPField(name: Array(name), value: Array(value)))
        }
        return HTTPResponseHead(statusLine: Array(statusLine), status: status, reason: Array(afterVersion.dropFirst(4)), fields: fields)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// RFC 9110 section 5.6.2: tchar.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        if byte >= 0x30 && byte <= 0x39 { return true }
        if (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A { return true }
        switch byte {
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }
}
