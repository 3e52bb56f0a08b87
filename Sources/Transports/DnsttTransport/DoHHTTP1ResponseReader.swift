import TransportWire

/// One DoH answer over HTTP/1.1 as the link uses it.
package struct DoHHTTP1Response: Sendable, Equatable {
    package let status: Int
    package let contentType: [UInt8]?
    package let retryAfter: [UInt8]?
    package let body: [UInt8]
    /// Whether the connection can carry the next request (HTTP/1.1, no `Connection: close`, the
    /// body's end known from its framing).
    package let reusable: Bool

    /// The same answer on a connection that must not carry another request.
    var unreusable: DoHHTTP1Response {
        DoHHTTP1Response(status: status, contentType: contentType, retryAfter: retryAfter, body: body, reusable: false)
    }
}

/// Reads one HTTP/1.1 response (RFC 9112) to a DoH POST from bytes in any split: the head through
/// TransportWire's HTTPHeadReader (its caps), interim 1xx responses skipped, then the body framed
/// by `Transfer-Encoding: chunked` (section 7.1), `Content-Length` (section 6.2) or the end of the
/// connection (section 6.3, `finish()`); 204 and 304 have none.
///
/// Hostile input: the body is capped at `bodyLimit` (64000, the reference's), counted as decoded
/// bytes, and a Content-Length over it is refused before any body byte; a chunk-size line (with
/// its extensions) at 1024 bytes, the trailer section at 16 KiB. So the reader holds at most the
/// head cap plus one read, or the body cap plus one read. Any other Transfer-Encoding, a
/// Content-Length that is not digits, or a chunk framing error is `http-malformed`; the verdict
/// does not depend on how the bytes were split. No I/O: the link's 60 s request deadline bounds
/// the wait.
package struct DoHHTTP1ResponseReader: Sendable {
    package static let bodyLimit = 64_000
    static let chunkLineLimit = 1024
    static let trailerLimit = 16 * 1024
    static let interimLimit = 8

    private enum Phase: Sendable {
        case head
        case fixed(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers(held: Int)
        case untilClose
        case done
    }

    package let bodyLimit: Int
    private var headReader = HTTPHeadReader()
    private var phase = Phase.head
    private var head: HTTPResponseHead?
    private var interim = 0
    private var body: [UInt8] = []
    private var line: [UInt8] = []
    private var reusable = true

    package init(bodyLimit: Int = DoHHTTP1ResponseReader.bodyLimit) {
        self.bodyLimit = max(0, bodyLimit)
    }

    /// Bytes that came after the complete response in the read that completed it.
    package private(set) var surplus = 0

    /// The final response's status once its head has arrived (for a pause after a refused body).
    package var status: Int? { head?.status }

    /// Feeds one read; the response once complete (bytes after it are counted in `surplus`).
    package mutating func append(_ bytes: [UInt8]) throws(DnsttError) -> DoHHTTP1Response? {
        var input = bytes[...]
        while true {
            switch phase {
            case .head:
                let parsed: (head: HTTPResponseHead, remainder: [UInt8])?
                do { parsed = try headReader.append(input) } catch { throw Self.wire(error) }
                guard let parsed else { return nil }
                input = parsed.remainder[...]
                try start(parsed.head)
            case .fixed(let remaining):
                let take = min(remaining, input.count)
                body.append(contentsOf: input.prefix(take))
                input = input.dropFirst(take)
                phase = remaining - take == 0 ? .done : .fixed(remaining: remaining - take)
                if remaining - take > 0 { return nil }
            case .chunkSize:
                guard let lineEnd = try takeLine(&input, limit: Self.chunkLineLimit, what: "a chunk-size line") else { return nil }
                let size = try Self.chunkSize(lineEnd)
                if size == 0 {
                    phase = .trailers(held: 0)
                } else {
                    guard size <= bodyLimit - body.count else { throw Self.tooLarge(bodyLimit) }
                    phase = .chunkData(remaining: size)
                }
            case .chunkData(let remaining):
                let take = min(remaining, input.count)
                body.append(contentsOf: input.prefix(take))
                input = input.dropFirst(take)
                if remaining - take > 0 { phase = .chunkData(remaining: remaining - take); return nil }
                phase = .chunkDataEnd
            case .chunkDataEnd:
                guard let ending = try takeLine(&input, limit: 0, what: "a chunk's line end") else { return nil }
                guard ending.isEmpty else { throw Self.malformed("a chunk longer than its size") }
                phase = .chunkSize
            case .trailers(let held):
                guard let trailer = try takeLine(&input, limit: Self.trailerLimit - held, what: "the trailer section") else { return nil }
                phase = trailer.isEmpty ? .done : .trailers(held: held + trailer.count + 2)
            case .untilClose:
                guard input.count <= bodyLimit - body.count else { throw Self.tooLarge(bodyLimit) }
                body.append(contentsOf: input)
                return nil
            case .done:
                // Bytes after the response answer nothing (one request is in flight): the link
                // does not reuse a connection that sent them. Kept out of the response so that
                // it does not depend on how the reads were split.
                surplus += input.count
                return response()
            }
        }
    }

    /// The end of the connection: the response when its body was delimited by the close, else
    /// nil (a truncated response is not a response).
    package mutating func finish() -> DoHHTTP1Response? {
        guard case .untilClose = phase else { return nil }
        phase = .done
        reusable = false
        return response()
    }

    private func response() -> DoHHTTP1Response? {
        guard let head else { return nil }
        return DoHHTTP1Response(status: head.status, contentType: head.value("content-type"), retryAfter: head.value("retry-after"),
                                body: body, reusable: reusable)
    }

    private mutating func start(_ parsed: HTTPResponseHead) throws(DnsttError) {
        if (100...199).contains(parsed.status) {
            // 100 Continue and other interim answers come before the real one (RFC 9110 section
            // 15.2); 101 would switch protocols, which a POST did not ask for.
            guard parsed.status != 101, interim < Self.interimLimit else { throw Self.malformed("an unexpected interim response") }
            interim += 1
            headReader = HTTPHeadReader()
            return
        }
        head = parsed
        let version = parsed.statusLine.prefix(8)
        if !HTTPResponseHead.equalsIgnoringCase(version, "http/1.1") || parsed.value("connection", is: "close") { reusable = false }
        if parsed.status == 204 || parsed.status == 304 {
            phase = .done
        } else if let encoding = parsed.value("transfer-encoding") {
            guard HTTPResponseHead.equalsIgnoringCase(encoding, "chunked") else { throw Self.malformed("a transfer coding other than chunked") }
            // Both framings at once is a smuggling pattern: chunked is read, the connection not reused.
            if parsed.value("content-length") != nil { reusable = false }
            phase = .chunkSize
        } else if let length = parsed.value("content-length") {
            guard !length.isEmpty, length.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { throw Self.malformed("a Content-Length that is not a number") }
            guard length.count <= 9, let count = Int(String(decoding: length, as: UTF8.self)), count <= bodyLimit else {
                throw Self.tooLarge(bodyLimit)
            }
            phase = count == 0 ? .done : .fixed(remaining: count)
        } else {
            reusable = false
            phase = .untilClose
        }
    }

    /// The content of the next CRLF- (or LF-) ended line, nil while it has not ended. `limit`
    /// bounds its content; past it the line is refused now, in any split.
    private mutating func takeLine(_ input: inout ArraySlice<UInt8>, limit: Int, what: String) throws(DnsttError) -> [UInt8]? {
        if let newline = input.firstIndex(of: 0x0A) {
            line.append(contentsOf: input[..<newline])
            input = input[(newline + 1)...]
            if line.last == 0x0D { line.removeLast() }
            guard line.count <= max(0, limit) else { throw Self.tooLarge(what: what) }
            defer { line = [] }
            return line
        }
        line.append(contentsOf: input)
        input = []
        // One byte more than the limit may be the CR of the line end.
        guard line.count <= max(0, limit) + 1 else { throw Self.tooLarge(what: what) }
        return nil
    }

    /// A chunk size (hex, RFC 9112 section 7.1) before any `;` extension; at most 7 hex digits
    /// (far above the body cap) so the value cannot overflow.
    private static func chunkSize(_ line: [UInt8]) throws(DnsttError) -> Int {
        var digits = line.prefix { $0 != UInt8(ascii: ";") }[...]
        while let last = digits.last, last == 0x20 || last == 0x09 { digits = digits.dropLast() }
        guard !digits.isEmpty, digits.count <= 7 else { throw malformed("a chunk size that is not 1 to 7 hex digits") }
        var value = 0
        for byte in digits {
            let digit: Int
            switch byte {
            case 0x30...0x39: digit = Int(byte - 0x30)
            case 0x41...0x46: digit = Int(byte - 0x41 + 10)
            case 0x61...0x66: digit = Int(byte - 0x61 + 10)
            default: throw malformed("a chunk size that is not hex")
            }
            value = value * 16 + digit
        }
        return value
    }

    private static func malformed(_ what: String) -> DnsttError {
        DnsttError(code: .dohResponseMalformed, kind: .protocolViolation, message: "the resolver's HTTP/1.1 answer has \(what)")
    }

    private static func tooLarge(_ limit: Int) -> DnsttError {
        DnsttError(code: .dohResponseTooLarge, kind: .protocolViolation, message: "the resolver's answer has a body over \(limit) bytes")
    }

    private static func tooLarge(what: String) -> DnsttError {
        DnsttError(code: .dohResponseTooLarge, kind: .protocolViolation, message: "the resolver's answer has \(what) over its cap")
    }

    private static func wire(_ error: WireError) -> DnsttError {
        DnsttError(code: error.code == .httpTooLarge ? .dohResponseTooLarge : .dohResponseMalformed, kind: .protocolViolation,
                   message: "the resolver's answer is not HTTP/1.1: \(error.message)")
    }
}
