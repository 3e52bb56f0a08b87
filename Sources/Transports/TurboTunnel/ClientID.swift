/// The 8-byte identity of one client session on a Turbo Tunnel server: snowflake keeps it across
/// redials of its carrier, dnstt puts it at the start of every query (one per session).
public struct ClientID: Hashable, Sendable, CustomStringConvertible {
    public static let size = 8

    public let bytes: [UInt8]

    public init(bytes: [UInt8]) throws(TurboTunnelError) {
        guard bytes.count == Self.size else {
            throw TurboTunnelError(code: .clientIDLength, kind: .invalidInput, message: "a ClientID is 8 bytes")
        }
        self.bytes = bytes
    }

    /// A fresh random ClientID (system CSPRNG).
    public static func random() -> ClientID {
        var generator = SystemRandomNumberGenerator()
        // Exactly 8 bytes, so the throwing initialiser cannot fail.
        return try! ClientID(bytes: (0..<size).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// Lower-case hex, as the Go servers print it.
    public var description: String {
        let digits: [Character] = Array("0123456789abcdef")
        return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0f)]] })
    }
}
