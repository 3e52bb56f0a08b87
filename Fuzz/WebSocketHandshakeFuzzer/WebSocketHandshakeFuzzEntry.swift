import PosternAppLayer

/// The handshake reader as this target drives it: PosternAppLayer's `WebSocketHandshakeReader`, which
/// the module offers this package as `package` API (users of the library do not see it).
enum WebSocketHandshakeFuzzEntry {
    static let maximumHeadBytes = WebSocketHandshakeReader.maximumHeadBytes

    enum Verdict: Equatable {
        /// Still waiting after every read; `buffered` is what the reader holds.
        case needMore(buffered: Int)
        case accepted(leftover: [UInt8], afterRead: Int)
        case refused(code: String, afterRead: Int)
    }

    static func acceptValue(for key: String) -> String { WebSocketHandshakeReader.acceptValue(for: key) }

    /// Feeds `reads` in order, stopping at the first verdict.
    static func run(key: String, reads: [ArraySlice<UInt8>]) -> Verdict {
        var reader = WebSocketHandshakeReader(key: key)
        for (index, read) in reads.enumerated() {
            do {
                if let leftover = try reader.feed(read) { return .accepted(leftover: leftover, afterRead: index) }
            } catch {
                return .refused(code: error.code.rawValue, afterRead: index)
            }
        }
        return .needMore(buffered: reader.bufferedCount)
    }
}
