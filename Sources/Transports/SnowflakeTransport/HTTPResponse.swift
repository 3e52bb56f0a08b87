import TransportWire

/// A parsed HTTP/1.x response: status, headers (names lower-cased), body (Content-Length,
/// chunked, or until the server closes). Bodies over the limit are an error, as upstream.
package struct HTTPResponse {
    package var status: Int
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]

    package init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The response TransportWire's reader read, its field names lower-cased and values as text.
    package init(_ response: HTTP1Response) {
        self.init(status: response.status,
                  headers: response.head.fields.map { field in
                      (String(decoding: field.name.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }, as: UTF8.self),
                       String(decoding: field.value, as: UTF8.self))
                  },
                  body: response.body)
    }

    package func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    /// Reads one response from `stream` with TransportWire's HTTP1ResponseReader (its grammar and
    /// caps; the body at most `bodyLimit`). Each read waits at most the stream's own read timeout,
    /// and the whole response at most until `deadline` (checked after every read), so a peer that
    /// drips a byte at a time cannot hold the rendezvous longer than deadline + one read timeout.
    static func read(from stream: any ByteStream, bodyLimit: Int, peer: String = "the broker",
                     deadline: ContinuousClock.Instant? = nil) async throws(SnowflakeError) -> HTTPResponse {
        var reader = HTTP1ResponseReader(bodyLimit: bodyLimit)
        while true {
            let piece: [UInt8]
            do {
                piece = try await stream.read(maximumCount: 16 * 1024)
            } catch {
                throw SnowflakeError(streamFailure: error)
            }
            let response: HTTP1Response?
            do throws(WireError) {
                // The end of the stream completes a body framed by the close, else it is an error.
                response = piece.isEmpty ? try reader.finish() : try reader.append(piece)
            } catch {
                throw Self.error(error, peer: peer, bodyLimit: bodyLimit)
            }
            if let response { return HTTPResponse(response) }
            if let deadline, ContinuousClock.now >= deadline {
                throw SnowflakeError(code: .timeout, kind: .network,
                                     message: "\(peer) did not finish its HTTP response in time")
            }
        }
    }

    /// The reader's error as snowflake words it: a body over the limit is `response-too-large`,
    /// anything else about the answer (its head, framing, caps, an early close) `broker-http`.
    package static func error(_ error: WireError, peer: String, bodyLimit: Int) -> SnowflakeError {
        if error.code == .httpBodyTooLarge {
            return SnowflakeError(code: .responseTooLarge, kind: .protocolViolation, message: "\(peer)'s response is larger than \(bodyLimit) bytes")
        }
        return SnowflakeError(code: .brokerHTTP, kind: .protocolViolation, message: "\(peer) sent a malformed HTTP response: \(error.message)")
    }
}
