import PosternSystem
/// Tor control protocol replies (control-spec §2.3, §2.4).
///
///     Reply     = *(MidReplyLine / DataReplyLine) EndReplyLine
///     MidReplyLine  = StatusCode "-" ReplyLine
///     DataReplyLine = StatusCode "+" ReplyLine CmdData     ; CmdData ends with "." CRLF
///     EndReplyLine  = StatusCode SP ReplyLine
///
/// Asynchronous events use status 650 and the same shape.
///
/// The rule for this decoder, as for every decoder of input Postern did not write: no byte may
/// trap, hang or grow memory without a stated cap. The status is three ASCII digits checked before
/// it is read as a number (0...999, no overflow); every index is behind a length check; a reply may
/// hold at most `ControlReplyParser.maximumReplyBytes` and a line at most
/// `ControlReplyParser.maximumLineBytes` (ControlConnection's reader enforces the line cap before
/// a newline arrives), beyond which the reply is a `.controlProtocol` error. tor is in-process, but
/// its replies quote what relays and bridges sent it.

/// One line of a reply, with the data block that followed it when the separator was "+".
public struct ControlReplyLine: Sendable, Hashable {
    public var status: Int
    public var text: String
    /// The lines of the data block (dot-unstuffed), for "+" lines; nil otherwise.
    public var data: [String]?

    public init(status: Int, text: String, data: [String]? = nil) {
        self.status = status
        self.text = text
        self.data = data
    }
}

public struct ControlReply: Sendable, Hashable {
    public var lines: [ControlReplyLine]

    public init(lines: [ControlReplyLine]) { self.lines = lines }

    /// The status of the final line, which is the status of the reply.
    public var status: Int { lines.last?.status ?? 0 }
    public var isSuccess: Bool { (200..<300).contains(status) }
    public var isAsynchronousEvent: Bool { status == 650 }
    /// The text of the last line, e.g. "OK" or the error message.
    public var message: String { lines.last?.text ?? "" }
}

/// Incremental parser: feed it one line at a time (without CRLF); it returns a reply when one ends.
public struct ControlReplyParser: Sendable {
    public static let maximumLineBytes = 1 << 20
    public static let maximumReplyBytes = 16 << 20
    private var lines: [ControlReplyLine] = []
    private var replyBytes = 0
    private var pendingData: (line: ControlReplyLine, body: [String])?

    public init() {}

    public mutating func feed(_ line: String) throws(TorCoreError) -> ControlReply? {
        let length = line.utf8.count
        guard length <= Self.maximumLineBytes else {
            return try fail("a line of \(length) bytes (at most \(Self.maximumLineBytes))")
        }
        replyBytes += length
        guard replyBytes <= Self.maximumReplyBytes else {
            return try fail("a reply over \(Self.maximumReplyBytes) bytes")
        }
        if var data = pendingData {
            if line == "." {
                var finished = data.line
                finished.data = data.body
                lines.append(finished)
                pendingData = nil
            } else {
                data.body.append(line.hasPrefix(".") ? String(line.dropFirst()) : line)
                pendingData = data
            }
            return nil
        }

        let bytes = Array(line.utf8)
        guard bytes.count >= 4,
              bytes[0..<3].allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return try fail("reply line is not a 3-digit status code and separator: \(Self.excerpt(line))")
        }
        let status = Int(String(decoding: bytes[0..<3], as: UTF8.self))!
        if let first = lines.first, first.status != status {
            return try fail("status \(status) inside a reply that began with \(first.status)")
        }
        let text = String(decoding: bytes[4...], as: UTF8.self)
        let replyLine = ControlReplyLine(status: status, text: text)
        switch bytes[3] {
        case UInt8(ascii: "-"):
            lines.append(replyLine)
            return nil
        case UInt8(ascii: "+"):
            pendingData = (replyLine, [])
            return nil
        case UInt8(ascii: " "):
            lines.append(replyLine)
            defer { lines = []; replyBytes = 0 }
            return ControlReply(lines: lines)
        default:
            return try fail("unknown separator after status \(status): \(Self.excerpt(line))")
        }
    }

    /// True while a reply has started but not ended.
    public var isInsideReply: Bool { !lines.isEmpty || pendingData != nil }

    private mutating func fail(_ message: String) throws(TorCoreError) -> ControlReply? {
        lines = []
        pendingData = nil
        replyBytes = 0
        throw TorCoreError(.controlProtocol, "malformed control reply: \(message)")
    }

    private static func excerpt(_ line: String) -> String {
        let clipped = line.prefix(40)
        return "\"\(clipped)\(clipped.count < line.count ? "…" : "")\""
    }
}

/// Quoting and keyword parsing shared by commands and events.
public enum ControlSyntax {
    /// A control-protocol QuotedString: backslash, quote and control characters escaped.
    public static func quoted(_ value: String) -> String {
        QuotedText.quoted(value)
    }

    /// Splits `WORD KEY=VALUE KEY="quoted value"` into positional words and keyword arguments.
    /// Throws on an unterminated quoted string.
    public static func keywordArguments(_ text: String) throws(TorCoreError) -> (positional: [String], keywords: [String: String]) {
        var positional: [String] = []
        var keywords: [String: String] = [:]
        var scalars = Substring(text).unicodeScalars[...]

        func skipSpaces() { while let c = scalars.first, c == " " { scalars.removeFirst() } }

        while true {
            skipSpaces()
            guard !scalars.isEmpty else { break }
            var token = ""
            var key: String?
            while let c = scalars.first, c != " " {
                if c == "=" && key == nil {
                    key = token
                    token = ""
                    scalars.removeFirst()
                    if scalars.first == "\"" {
                        scalars.removeFirst()
                        var closed = false
                        while let q = scalars.popFirst() {
                            if q == "\\" {
                                guard let escaped = scalars.popFirst() else { break }
                                switch escaped {
                                case "n": token += "\n"
                                case "r": token += "\r"
                                case "t": token += "\t"
                                default: token.unicodeScalars.append(escaped)
                                }
                            } else if q == "\"" {
                                closed = true
                                break
                            } else {
                                token.unicodeScalars.append(q)
                            }
                        }
                        guard closed else {
                            throw TorCoreError(.controlProtocol, "unterminated quoted value for \(key ?? "?")")
                        }
                        break
                    }
                    continue
                }
                token.unicodeScalars.append(c)
                scalars.removeFirst()
            }
            if let key { keywords[key] = token } else { positional.append(token) }
        }
        return (positional, keywords)
    }
}
