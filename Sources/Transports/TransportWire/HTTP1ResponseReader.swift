/// Reads one HTTP/1.1 response (RFC 9112) from bytes in any split: the one response reader of the
/// transports (snowflake's broker and AMP cache answers, dnstt's DoH answers over HTTP/1.1). The
/// head goes through ``HTTPHeadReader`` (its grammar and caps); interim 1xx responses are skipped
/// (RFC 9110 section 15.2, as Go's client, which both references use, does); then the body is
/// framed by `Transfer-Encoding: chunked` (RFC 9112 section 7.1, trailers read and dropped),
/// `Content-Length` (section 6.2) or the end of the connection (section 6.3, ``finish()``); 1xx,
/// 204 and 304 have none.
///
/// Refused as `http-malformed`: a transfer coding other than exactly `chunked` (Go refuses them
/// too), a Content-Length that is not digits, a chunk size that is not hex (SP/HTAB around it and
/// `;` extensions allowed), a chunk not followed by its line end, a 101 (nobody asked for an
/// upgrade), more than `interimLimit` interim responses.
///
/// Hostile input: no byte traps, hangs or grows memory past a cap. The head caps are the
/// HTTPHeadReader's (per head, interim ones included); the body is at most `bodyLimit` decoded
/// bytes (`http-body-too-large`): a Content-Length or chunk size over what is left of it is refused
/// before any of its bytes, compared after dropping leading zeros and without any sum that could
/// overflow (a size of more than 18 decimal or 15 hex significant digits is over any cap, and
/// refused as such); a chunk-size line at most `chunkLineLimit` bytes, the trailer section at most
/// `trailerLimit` (`http-too-large`), each refused as soon as it is over, in any split. So the
/// reader holds at most the body cap plus one line cap (or the head cap plus 3) plus one read
/// (``bufferedBytes``). The verdict does not depend on how the bytes are split into reads. No I/O:
/// the wait is bounded by the caller's deadline (the broker exchange's, the DoH request's 60 s).
/// Errors are ``WireError``s with messages written to follow the caller's own words; each
/// transport maps them to its own error type.
public struct HTTP1ResponseReader: Sendable {
    /// Longest chunk-size line (with extensions).
    public static let defaultChunkLineLimit = 1024
    /// Largest trailer section (its lines and their line ends).
    public static let defaultTrailerLimit = 16 * 1024
    /// Most interim (1xx) responses before the final one.
    public static let defaultInterimLimit = 8

    /// The caps in force (fuzz targets pass small ones to reach them).
    public let bodyLimit: Int
    public let headLimit: Int
    public let fieldCountLimit: Int
    public let chunkLineLimit: Int
    public let trailerLimit: Int
    public let interimLimit: Int

    private enum Phase: Sendable {
        case head
        /// Body bytes still to come: the rest of a Content-Length, or of one chunk.
        case data(remaining: Int, chunked: Bool)
        case chunkSize
        case chunkDataEnd
        case trailers(held: Int)
        case untilClose
        case done
    }

    private var headReader: HTTPHeadReader
    private var phase = Phase.head
    private var head: HTTPResponseHead?
    private var interim = 0
    private var body: [UInt8] = []
    /// The framing line read so far (chunk size, a chunk's line end, a trailer line).
    private var line: [UInt8] = []
    private var reusable = true

    public init(bodyLimit: Int, headLimit: Int = HTTPHeadReader.maximumHeadBytes,
                fieldCountLimit: Int = HTTPHeadReader.maximumFieldCount, chunkLineLimit: Int = defaultChunkLineLimit,
                trailerLimit: Int = defaultTrailerLimit, interimLimit: Int = defaultInterimLimit) {
        self.bodyLimit = max(0, bodyLimit)
        self.headLimit = max(1, headLimit)
        self.fieldCountLimit = max(0, fieldCountLimit)
        self.chunkLineLimit = max(1, chunkLineLimit)
        self.trailerLimit = max(0, trailerLimit)
        self.interimLimit = max(0, interimLimit)
        headReader = HTTPHeadReader(headLimit: self.headLimit, fieldCountLimit: self.fieldCountLimit)
    }

    /// Bytes that came after the complete response in the reads fed since it completed (the
    /// caller decides what they mean: one request in flight, so they answer nothing).
    public private(set) var surplus = 0

    /// The final response's status once its head has arrived (a caller may act on a status whose
    /// body was refused).
    public var status: Int? { head?.status }

    /// Bytes held now: an unfinished head, an unfinished framing line, the body so far.
    public var bufferedBytes: Int { headReader.bufferedCount + line.count + body.count }

    /// Feeds one read; the response once complete (it is returned again for any later read, whose
    /// bytes are counted in ``surplus``).
    public mutating func append(_ bytes: some Collection<UInt8>) throws(WireError) -> HTTP1Response? {
        var input = ArraySlice(bytes)
        while true {
            switch phase {
            case .head:
                let parsed: (head: HTTPResponseHead, remainder: [UInt8])?
                do {
                    parsed = try headReader.append(input)
                } catch where error.code == .httpTooLarge {
                    // Said as the head's, apart from the body's framing lines past their caps.
                    throw Self.tooLarge("the header section is too large (\(error.message))")
                }
                guard let parsed else { return nil }
                input = parsed.remainder[...]
                try start(parsed.head)
            case .data(let remaining, let chunked):
                let left = takeBody(remaining, from: &input)
                guard left == 0 else {
                    phase = .data(remaining: left, chunked: chunked)
                    return nil
                }
                phase = chunked ? .chunkDataEnd : .done
            case .chunkSize:
                guard let sizeLine = try takeLine(&input, limit: chunkLineLimit, what: "a chunk-size line") else { return nil }
                let size = try chunkSize(sizeLine)
                if size == 0 {
                    phase = .trailers(held: 0)
                } else {
                    guard size <= bodyLimit - body.count else { throw bodyTooLarge() }
                    phase = .data(remaining: size, chunked: true)
                }
            case .chunkDataEnd:
                // CRLF (or a bare LF) right after the chunk's data; `line` holds a CR seen alone.
                guard let byte = input.first else { return nil }
                input = input.dropFirst()
                if byte == 0x0D && line.isEmpty {
                    line = [byte]
                    continue
                }
                guard byte == 0x0A else { throw Self.malformed("a chunk longer than its size") }
                line = []
                phase = .chunkSize
            case .trailers(let held):
                guard let trailer = try takeLine(&input, limit: trailerLimit - held, what: "the trailer section") else { return nil }
                phase = trailer.isEmpty ? .done : .trailers(held: held + trailer.count + 2)
            case .untilClose:
                guard input.count <= bodyLimit - body.count else { throw bodyTooLarge() }
                body.append(contentsOf: input)
                return nil
            case .done:
                surplus += input.count
                return response()
            }
        }
    }

    /// The end of the connection: the response when it is complete (its body delimited by the
    /// close, or already ended), else `closed` (a truncated response is not a response).
    public mutating func finish() throws(WireError) -> HTTP1Response {
        switch phase {
        case .untilClose:
            phase = .done
            reusable = false
        case .done:
            break
        case .head:
            throw Self.closed("the connection closed before the head ended")
        case .data(_, chunked: false):
            throw Self.closed("the connection closed before the Content-Length's end")
        case .chunkSize, .data(_, chunked: true), .chunkDataEnd, .trailers:
            throw Self.closed("the connection closed inside the chunked body")
        }
        guard let response = response() else { throw Self.closed("the connection closed before the head ended") }
        return response
    }

    private func response() -> HTTP1Response? {
        head.map { HTTP1Response(head: $0, body: body, reusable: reusable) }
    }

    private mutating func start(_ parsed: HTTPResponseHead) throws(WireError) {
        if (100...199).contains(parsed.status) {
            // 100 Continue and other interim answers come before the real one; 101 would switch
            // protocols, which these requests never ask for.
            guard parsed.status != 101 else { throw Self.malformed("a 101 answer to a request that asked for no upgrade") }
            guard interim < interimLimit else { throw Self.malformed("more than \(interimLimit) interim (1xx) responses") }
            interim += 1
            headReader = HTTPHeadReader(headLimit: headLimit, fieldCountLimit: fieldCountLimit)
            return
        }
        head = parsed
        // The head is done: its buffer is released.
        headReader = HTTPHeadReader(headLimit: 1, fieldCountLimit: 0)
        if !HTTPResponseHead.equalsIgnoringCase(parsed.statusLine.prefix(8), "http/1.1") || parsed.value("connection", is: "close") {
            reusable = false
        }
        if parsed.status == 204 || parsed.status == 304 {
            phase = .done
        } else if let encoding = parsed.value("transfer-encoding") {
            guard HTTPResponseHead.equalsIgnoringCase(encoding, "chunked") else { throw Self.malformed("a transfer coding other than chunked") }
            // Both framings at once is a smuggling pattern: chunked is read, the connection not reused.
            if parsed.value("content-length") != nil { reusable = false }
            phase = .chunkSize
        } else if let text = parsed.value("content-length") {
            guard !text.isEmpty, text.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { throw Self.malformed("a Content-Length that is not a number") }
            let digits = text.drop { $0 == 0x30 }
            // 18 digits fit an Int; more is over any cap.
            guard digits.count <= 18 else { throw bodyTooLarge() }
            let length = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            guard length <= bodyLimit else { throw bodyTooLarge() }
            phase = length == 0 ? .done : .data(remaining: length, chunked: false)
        } else {
            reusable = false
            phase = .untilClose
        }
    }

    /// Moves up to `remaining` body bytes (already checked against the cap) from `input` to the
    /// body; how many are still to come.
    private mutating func takeBody(_ remaining: Int, from input: inout ArraySlice<UInt8>) -> Int {
        let count = min(remaining, input.count)
        body.append(contentsOf: input.prefix(count))
        input = input.dropFirst(count)
        return remaining - count
    }

    /// The content of the next CRLF- (or LF-) ended line, nil while it has not ended. `limit`
    /// bounds its content; past it the line is refused now, in any split.
    private mutating func takeLine(_ input: inout ArraySlice<UInt8>, limit: Int, what: String) throws(WireError) -> [UInt8]? {
        if let newline = input.firstIndex(of: 0x0A) {
            line.append(contentsOf: input[..<newline])
            input = input[(newline + 1)...]
            if line.last == 0x0D { line.removeLast() }
            guard line.count <= max(0, limit) else { throw Self.tooLarge("\(what) over its cap") }
            defer { line = [] }
            return line
        }
        line.append(contentsOf: input)
        input = []
        // One byte more than the limit may be the CR of the line end.
        guard line.count <= max(0, limit) + 1 else { throw Self.tooLarge("\(what) over its cap") }
        return nil
    }

    /// A chunk size (hex) before any `;` extension, SP/HTAB around it allowed. More than 15
    /// significant digits (2^60 and up) is over any body cap, so the value cannot overflow.
    private func chunkSize(_ line: [UInt8]) throws(WireError) -> Int {
        var digits = line.prefix { $0 != UInt8(ascii: ";") }[...]
        while let first = digits.first, first == 0x20 || first == 0x09 { digits = digits.dropFirst() }
        while let last = digits.last, last == 0x20 || last == 0x09 { digits = digits.dropLast() }
        guard !digits.isEmpty else { throw Self.malformed("a chunk size that is not hex") }
        var value = 0
        var significant = 0
        for byte in digits {
            let digit: Int
            switch byte {
            case 0x30...0x39: digit = Int(byte - 0x30)
            case 0x41...0x46: digit = Int(byte - 0x41 + 10)
            case 0x61...0x66: digit = Int(byte - 0x61 + 10)
            default: throw Self.malformed("a chunk size that is not hex")
            }
            if value == 0 && digit == 0 { continue }
            significant += 1
            // Checked after the whole line is known to be hex, so the verdict (malformed or too
            // large) does not depend on where the digits stop.
            if significant <= 15 { value = value * 16 + digit }
        }
        guard significant <= 15 else { throw bodyTooLarge() }
        return value
    }

    private func bodyTooLarge() -> WireError {
        WireError(code: .httpBodyTooLarge, kind: .protocolViolation, message: "a body over \(bodyLimit) bytes")
    }

    private static func malformed(_ what: String) -> WireError {
        WireError(code: .httpMalformed, kind: .protocolViolation, message: what)
    }

    private static func tooLarge(_ what: String) -> WireError {
        WireError(code: .httpTooLarge, kind: .protocolViolation, message: what)
    }

    private static func closed(_ what: String) -> WireError {
        WireError(code: .closed, kind: .protocolViolation, message: what)
    }
}
