import TransportBase

/// A loopback listener whose first connection runs `script`: an HTTP/2 "server" that sends what a
/// test wants, frame by frame (cleartext).
final class HostileHTTP2Peer: Sendable {
    private let listener: LoopbackListener
    private let task: Task<Void, Never>

    init(_ script: @escaping @Sendable (TCPSocket) async throws -> Void) async throws {
        let listener = try LoopbackListener()
        self.listener = listener
        task = Task {
            guard let connection = try? await listener.accept() else { return }
            try? await script(connection)
            connection.close()
        }
    }

    func connect() async throws -> TCPSocket {
        try await TCPSocket.connect(to: try TransportEndpoint(parsing: "127.0.0.1:\(listener.port)"), timeout: .seconds(5))
    }

    func stop() {
        task.cancel()
        listener.close()
    }

    /// One frame (RFC 9113 section 4.1): 24-bit length, type, flags, 31-bit stream, payload.
    static func frame(type: UInt8, flags: UInt8, stream: UInt32, payload: [UInt8]) -> [UInt8] {
        let length = payload.count
        return [UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff), type, flags,
                UInt8(stream >> 24 & 0x7f), UInt8(stream >> 16 & 0xff), UInt8(stream >> 8 & 0xff), UInt8(stream & 0xff)] + payload
    }
}
