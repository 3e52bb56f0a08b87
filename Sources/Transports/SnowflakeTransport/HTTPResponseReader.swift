import TransportWire

/// The incremental HTTP/1.x response parser behind `HTTPResponse.read`: bytes in, in any split, a
/// response out when it is complete.
///
/// Hostile input (the answer crosses CDNs, and anyone on the path of an http:// broker): no byte may
/// trap, hang or grow memory without a cap. The head is read by TransportWire's HTTPHeadReader (its
/// grammar and caps in HTTPResponseHead.swift), here with at most headLimit bytes and
/// headerCountLimit header lines; a chunk-size line at most chunkLineLimit bytes of hex digits, parsed with overflow
/// checks; every size is compared against what is left of bodyLimit before any sum (a chunk size of
/// 7fffffffffffffff after a 1-byte chunk used to overflow `body.count + size`); a Content-Length is
/// digits only and at most bodyLimit; a body without either ends at EOF, also at most bodyLimit.
/// Impossible values are typed errors (broker-http, response-too-large).
package struct HTTPResponseReader {
    /// Largest head (status line and headers).
    package static let defaultHeadLimit = HTTPHeadReader.maximumHeadBytes
    /// Most header lines.
    package static let defaultHeaderCountLimit = HTTPHeadReader.maximumFieldCount
    /// Longest chunk-size line (with extensions).
    package static let defaultChunkLineLimit = 1024

    package let bodyLimit: Int
    /// The caps in force (the static defaults; the fuzz target uses small ones to reach them).
    package let headLimit: Int
    package let headerCountLimit: Int
    package let chunkLineLimit: Int
    private let peer: String
    private var head: HTTPHeadReader
    private var buffer: [UInt8] = []
    private var start = 0
    private var status = 0
    private var headers: [(name: String, value: String)] = []
    private var body: [UInt8] = []

    private enum Stage {
        case head, chunkSize, chunkData(remaining: Int), chunkEnd, fixed(remaining: Int), untilClose, done
    }
    private var stage = Stage.head

    package init(bodyLimit: Int, peer: String = "the broker", headLimit: Int = HTTPResponseReader.defaultHeadLimit,
                 headerCountLimit: Int = HTTPResponseReader.defaultHeaderCountLimit,
                 chunkLineLimit: Int = HTTPResponseReader.defaultChunkLineLimit) {
        self.bodyLimit = max(0, bodyLimit)
        self.peer = peer
        self.headLimit = max(4, headLimit)
        self.headerCountLimit = max(0, headerCountLimit)
        self.chunkLineLimit = max(1, chunkLineLimit)
        self.head = HTTPHeadReader(headLimit: self.headLimit, fieldCountLimit: self.headerCountLimit)
    }

    /// Bytes held now (undecoded input plus the body so far): never more than headLimit + 3 (or
    /// chunkLineLimit + 1) + bodyLimit + one read.
    package var bufferedBytes: Int { head.bufferedCount + buffer.count - start + body.count }

    private func malformed(_ what: String) -> SnowflakeError {
        SnowflakeError(code: .brokerHTTP, kind: .protocolViolation, message: "\(peer) sent a malformed HTTP response: \(what)")
    }

    private func tooLarge() -> SnowflakeError {
        SnowflakeError(code: .responseTooLarge, kind: .protocolViolation,
                       message: "\(peer)'s response is larger than \(bodyLimit) bytes")
    }

    /// Feeds bytes; the response once it is complete (later bytes are ignored).
    package mutating func append(_ bytes: some Collection<UInt8>) throws(SnowflakeError) -> HTTPResponse? {
        if case .done = stage { return response }
        if case .head = stage {
            let parsed: (head: HTTPResponseHead, remainder: [UInt8])?
            do {
                parsed = try head.append(bytes)
            } catch {
                throw malformed(error.code == .httpTooLarge ? "the header section is too large (\(error.message))" : error.message)
            }
            guard let parsed else { return nil }
            try startBody(parsed.head)
            head = HTTPHeadReader(headLimit: 1, fieldCountLimit: 0)  // done: its buffer is released
            buffer = parsed.remainder
            start = 0
        } else {
            if start > 0 && start >= buffer.count / 2 {
                buffer.removeFirst(start)
                start = 0
            }
            buffer.append(contentsOf: bytes)
        }
        try advance()
        if case .done = stage { return response }
        return nil
    }

    /// The peer closed: the response if it is complete (a body framed by EOF), else an error.
    package mutating func endOfStream() throws(SnowflakeError) -> HTTPResponse {
        switch stage {
        case .done: return response
        case .untilClose:
            stage = .done
            return response
        case .head: throw malformed("the connection closed before the headers ended")
        case .chunkSize, .chunkData, .chunkEnd: throw malformed("the connection closed inside the chunked body")
        case .fixed: throw malformed("the body is shorter than its Content-Length")
        }
    }

    private var response: HTTPResponse { HTTPResponse(status: status, headers: headers, body: body) }

    private var available: Int { buffer.count - start }

    private mutating func advance() throws(SnowflakeError) {
        while true {
            switch stage {
            case .done:
                return
            case .head:
                return  // append hands the head to HTTPHeadReader
            case .chunkSize:
                guard let end = find([13, 10], from: start) else {
                    guard available < chunkLineLimit + 2 else { throw malformed("a chunk-size line is too long") }
                    return
                }
                guard end - start <= chunkLineLimit else { throw malformed("a chunk-size line is too long") }
                let size = try chunkSize(buffer[start..<end])
                start = end + 2
                if size == 0 {
                    stage = .done  // trailers, if any, are not needed: the connection is closed after one response
                } else {
                    guard size <= bodyLimit - body.count else { throw tooLarge() }
                    stage = .chunkData(remaining: size)
                }
            case .chunkData(let remaining):
                let take = min(remaining, available)
                guard take > 0 else { return }
                body += buffer[start..<(start + take)]
                start += take
                stage = remaining - take == 0 ? .chunkEnd : .chunkData(remaining: remaining - take)
            case .chunkEnd:
                guard available >= 2 else { return }
                guard buffer[start] == 13, buffer[start + 1] == 10 else { throw malformed("a chunk does not end with CRLF") }
                start += 2
                stage = .chunkSize
            case .fixed(let remaining):
                let take = min(remaining, available)
                body += buffer[start..<(start + take)]
                start += take
                if remaining - take == 0 { stage = .done } else {
                    stage = .fixed(remaining: remaining - take)
                    return
                }
            case .untilClose:
                guard available <= bodyLimit - body.count else { throw tooLarge() }
                body += buffer[start...]
                start = buffer.count
                return
            }
        }
    }

    private func find(_ pattern: [UInt8], from: Int) -> Int? {
        guard buffer.count >= pattern.count, from <= buffer.count - pattern.count else { return nil }
        var index = from
        while index <= buffer.count - pattern.count {
            if buffer[index] == pattern[0] && buffer[(index + 1)..<(index + pattern.count)].elementsEqual(pattern.dropFirst()) {
                return index
            }
            index += 1
        }
        return nil
    }

    /// The framing of the body, from the head (names lower-cased, values as text).
    private mutating func startBody(_ parsed: HTTPResponseHead) throws(SnowflakeError) {
        status = parsed.status
        headers = parsed.fields.map { field in
            (String(decoding: field.name.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }, as: UTF8.self),
             String(decoding: field.value, as: UTF8.self))
        }
        let response = self.response
        // No body, whatever the fields say (RFC 9112 section 6.3): without this a kept-alive
        // connection would be read until the deadline.
        if status < 200 || status == 204 || status == 304 {
            stage = .done
        } else if response.header("transfer-encoding")?.lowercased().contains("chunked") == true {
            stage = .chunkSize
        } else if let text = response.header("content-length") {
            guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                  let length = Int(text) else { throw malformed("a bad Content-Length") }
            guard length <= bodyLimit else { throw tooLarge() }
            stage = .fixed(remaining: length)
        } else {
            stage = .untilClose
        }
    }

    /// The chunk size in hex (extensions after ";" ignored), overflow-checked.
    private func chunkSize(_ line: ArraySlice<UInt8>) throws(SnowflakeError) -> Int {
        var size = 0
        var digits = 0
        for byte in line {
            if byte == UInt8(ascii: ";") { break }
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                guard digits > 0 else { continue }  // tolerate leading whitespace, as before
                break
            }
            let value: Int
            switch byte {
            case 48...57: value = Int(byte) - 48
            case 65...70: value = Int(byte) - 55
            case 97...102: value = Int(byte) - 87
            default: throw malformed("a bad chunk size")
            }
            let (shifted, overflow) = size.multipliedReportingOverflow(by: 16)
            guard !overflow else { throw tooLarge() }
            size = shifted + value
            digits += 1
        }
        guard digits > 0 else { throw malformed("a bad chunk size") }
        return size
    }
}
