import PosternAppLayer

/// The server-frame parser as this target drives it: PosternAppLayer's `WebSocketFrameParser`, which
/// the module offers this package as `package` API (users of the library do not see it).
enum WebSocketFuzzEntry {
    enum Event: Equatable {
        case message(WebSocketMessage)
        case ping([UInt8])
        case pong([UInt8])
        case close(WebSocketCloseStatus?)
    }

    /// Feeds `pieces` in order; returns the events and, if the stream broke the protocol, the close
    /// code the client would answer with.
    static func parse(_ pieces: [ArraySlice<UInt8>], maximumMessageBytes: Int) -> (events: [Event], closeCode: UInt16?) {
        var parser = WebSocketFrameParser(maximumMessageBytes: maximumMessageBytes)
        var events: [Event] = []
        do {
            for piece in pieces {
                for event in try parser.feed(piece) {
                    switch event {
                    case .message(let message): events.append(.message(message))
                    case .ping(let payload): events.append(.ping(payload))
                    case .pong(let payload): events.append(.pong(payload))
                    case .close(let status): events.append(.close(status))
                    }
                }
            }
        } catch {
            return (events, error.status.code)
        }
        return (events, nil)
    }
}
