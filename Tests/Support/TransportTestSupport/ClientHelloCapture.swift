import Synchronization
import TransportBase

/// A listener on 127.0.0.1 that keeps the TLS records its first client sends until they hold one
/// whole handshake message (the ClientHello), then closes the connection, or holds it open without
/// a word (`holdsAfterHello`: a server that never answers). What a censor on the path would read
/// of a transport's TLS dial, without a TLS server.
///
/// Caps: at most `byteLimit` bytes are kept; the wait for them is bounded by `hello(within:)`.
public final class ClientHelloCapture: Sendable {
    public static let byteLimit = 64 * 1024

    private let listener: LoopbackListener
    private let captured = Mutex<[UInt8]?>(nil)

    public init(holdsAfterHello: Bool = false) throws {
        listener = try LoopbackListener()
        let listener = listener
        Task { [self] in
            guard let connection = try? await listener.accept() else { return }
            var received: [UInt8] = []
            while !Self.holdsWholeHandshakeMessage(received), received.count < Self.byteLimit {
                guard let chunk = try? await connection.read(maximumCount: 16_384), !chunk.isEmpty else { break }
                received += chunk
            }
            self.captured.withLock { $0 = received }
            if holdsAfterHello {
                // Silent until the client gives up and closes.
                while let chunk = try? await connection.read(maximumCount: 16_384), !chunk.isEmpty {}
            }
            connection.close()
        }
    }

    /// Where clients connect.
    public var endpoint: TransportEndpoint { listener.endpoint }
    public var port: UInt16 { listener.port }

    /// The bytes of the first connection once they hold the hello (or the connection ended).
    public func hello(within limit: Duration = .seconds(30)) async throws -> [UInt8] {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let bytes = captured.withLock({ $0 }) { return bytes }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TransportError(code: .timedOut, kind: .timeout, message: "no client sent a hello within \(limit)")
    }

    public func close() { listener.close() }

    /// Whether `bytes`, read as TLS handshake records (type 22), hold the first handshake message
    /// whole. Lengths are read with bounds checks; anything that is not a handshake record ends it.
    static func holdsWholeHandshakeMessage(_ bytes: [UInt8]) -> Bool {
        var handshake: [UInt8] = []
        var offset = 0
        while bytes.count - offset >= 5 {
            guard bytes[offset] == 22 else { return true }
            let length = Int(bytes[offset + 3]) << 8 | Int(bytes[offset + 4])
            guard bytes.count - offset - 5 >= length else { return false }
            handshake += bytes[(offset + 5)..<(offset + 5 + length)]
            offset += 5 + length
            if handshake.count >= 4 {
                let needed = 4 + (Int(handshake[1]) << 16 | Int(handshake[2]) << 8 | Int(handshake[3]))
                if handshake.count >= needed { return true }
            }
        }
        return false
    }
}
