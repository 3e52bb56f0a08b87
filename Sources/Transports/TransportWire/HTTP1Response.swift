/// One HTTP/1.1 response as ``HTTP1ResponseReader`` reads it: the final head (interim 1xx heads
/// skipped), the decoded body, and whether the connection may carry another request.
public struct HTTP1Response: Sendable, Equatable {
    public let head: HTTPResponseHead
    /// The body with the chunked framing removed; empty for 204, 304 and a 0 Content-Length.
    public let body: [UInt8]
    /// Whether the connection can carry the next request: HTTP/1.1, no `Connection: close`, and the
    /// body's end known from its framing (not the close). Bytes after the response are the caller's
    /// to weigh (``HTTP1ResponseReader/surplus``): they depend on how the reads were split.
    public let reusable: Bool

    public var status: Int { head.status }

    public init(head: HTTPResponseHead, body: [UInt8], reusable: Bool) {
        self.head = head
        self.body = body
        self.reusable = reusable
    }
}
