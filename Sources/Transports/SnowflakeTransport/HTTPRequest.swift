/// A minimal HTTP/1.1 request with the header fields, in the order, that Go's net/http client
/// writes for the reference client's poll: Host, User-Agent, Content-Length (with a body), then
/// `Accept-Encoding: gzip`, which Go's transport adds and whose answer it inflates itself
/// (BrokerRendezvous does, through GzipBody, with the same body limit); no content type (the Go
/// client sets none).
///
/// No `Connection` field: Go sends none, and the response reader stops at the end of a framed body
/// (Content-Length, chunked, or no body for 1xx/204/304), so a broker or front that keeps the
/// connection alive does not hold the exchange; BrokerRendezvous closes the connection after one
/// response.
struct HTTPRequest {
    var method: String
    var path: String
    var host: String
    var body: [UInt8]?

    var encoded: [UInt8] {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\nUser-Agent: Go-http-client/1.1\r\n"
        if let body { head += "Content-Length: \(body.count)\r\n" }
        head += "Accept-Encoding: gzip\r\n\r\n"
        return Array(head.utf8) + (body ?? [])
    }
}
