internal import CZlib

/// A gzip-encoded response body inflated with zlib, at most `limit` bytes out (the poll asks for
/// gzip as Go's client does, so the broker, a front or the AMP cache may answer with it). The body
/// is hostile: a small body that inflates past the limit (a "zip bomb") is response-too-large as
/// soon as the limit is passed, never allocated past it; anything that is not whole, valid gzip
/// (bad header or checksum, truncated, trailing bytes) is broker-http.
enum GzipBody {
    static func inflate(_ body: [UInt8], limit: Int, peer: String) throws(SnowflakeError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: max(0, limit) + 1)
        var written = 0
        let status = body.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out in
                postern_gunzip(input.baseAddress, input.count, out.baseAddress, out.count, &written)
            }
        }
        switch Int(status) {
        case Int(POSTERN_GUNZIP_OK):
            return Array(output.prefix(written))
        case Int(POSTERN_GUNZIP_TOO_LARGE):
            throw SnowflakeError(code: .responseTooLarge, kind: .protocolViolation,
                                 message: "\(peer)'s gzip-encoded response inflates to more than \(limit) bytes")
        case Int(POSTERN_GUNZIP_NO_MEMORY):
            throw SnowflakeError(code: .brokerHTTP, kind: .network, message: "no memory to inflate \(peer)'s gzip-encoded response")
        default:
            throw SnowflakeError(code: .brokerHTTP, kind: .protocolViolation,
                                 message: "\(peer) sent a malformed gzip-encoded response")
        }
    }
}
