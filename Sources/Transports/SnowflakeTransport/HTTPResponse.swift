import TransportWire

/// A parsed HTTP/1.x response: status, headers (names lower-cased), body (Content-Length,
/// chunked, or until the server closes). Bodies over the limit are an error, as upstream.
package struct HTTPResponse {
    package var status: Int
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]

    package func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    /// Reads one response from `stream`. Each read waits at most the stream's own read timeout, and
    /// the whole response at most until `deadline` (checked after every read), so a peer that drips
    /// a byte at a time cannot hold the rendezvous longer than deadline + one read timeout.
    static func read(from stream: any ByteStream, bodyLimit: Int, peer: String = "the broker",
                     deadline: ContinuousClock.Instant? = nil) async throws(SnowflakeError) -> HTTPResponse {
        var reader = HTTPResponseReader(bodyLimit: bodyLimit, peer: peer)
        while true {
            let piece: [UInt8]
            do {
                piece = try await stream.read(maximumCount: 16 * 1024)
            } catch {
                throw SnowflakeError(streamFailure: error)
            }
            if piece.isEmpty { return try reader.endOfStream() }
            if let response = try reader.append(piece) { return response }
            if let deadline, ContinuousClock.now >= deadline {
                throw SnowflakeError(code: .timeout, kind: .network,
                                     message: "\(peer) did not finish its HTTP response in time")
            }
        }
    }
}
