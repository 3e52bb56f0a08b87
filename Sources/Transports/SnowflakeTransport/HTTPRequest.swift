/// A minimal HTTP/1.1 request: no keep-alive, no content type (the Go client sets none).
struct HTTPRequest {
    var method: String
    var path: String
    var host: String
    var body: [UInt8]?

    var encoded: [UInt8] {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\nUser-Agent: Go-http-client/1.1\r\n"
        if let body { head += "Content-Length: \(body.count)\r\n" }
        head += "Connection: close\r\n\r\n"
        return Array(head.utf8) + (body ?? [])
    }
}
