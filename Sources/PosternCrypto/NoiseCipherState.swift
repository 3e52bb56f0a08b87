/// One direction of a finished Noise handshake (Noise revision 34 §5.1, CipherState): a key and a
/// 64-bit message counter, ChaCha20-Poly1305 with the nonce 4 zero bytes ‖ counter little-endian,
/// and empty associated data (as dnstt and most Noise transports use it). No rekey.
///
/// A class, not a struct, on purpose: a copy of a cipher state would encrypt with the same nonces
/// as the original, which breaks ChaCha20-Poly1305 entirely. One owner uses it, in order; it is
/// not `Sendable`.
public final class NoiseCipherState {
    /// Noise's cap on any message (§3): a transport message is at most this many bytes.
    public static let maximumMessageLength = 65535
    /// The most plaintext one message carries (the cap less the 16-byte tag).
    public static let maximumPlaintextLength = maximumMessageLength - ChaCha20Poly1305.tagLength

    private let key: [UInt8]
    /// The counter of the next message. 2^64 − 1 is reserved (§5.1), so it is never used.
    public private(set) var nonce: UInt64 = 0

    init(key: [UInt8]) {
        self.key = key
    }

    /// `plaintext` (at most ``maximumPlaintextLength`` bytes) sealed with the next nonce:
    /// ciphertext ‖ tag, 16 bytes longer.
    public func encrypt(_ plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard plaintext.count <= Self.maximumPlaintextLength else {
            throw NoiseError(.messageTooLarge, kind: .invalidInput,
                             "a Noise message carries at most \(Self.maximumPlaintextLength) bytes of plaintext")
        }
        let sealed = try ChaCha20Poly1305.seal(key: key, nonce: try nonceBytes(), plaintext: plaintext)
        nonce += 1
        return sealed
    }

    /// The plaintext of the peer's next message. A failed tag leaves the counter where it was
    /// (§5.1), but the stream it came from is broken: callers end the session.
    public func decrypt(_ ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard ciphertext.count <= Self.maximumMessageLength else {
            throw NoiseError(.messageTooLarge, "a Noise message is longer than 65535 bytes")
        }
        guard ciphertext.count >= ChaCha20Poly1305.tagLength else {
            throw NoiseError(.messageTooShort, "a Noise message is shorter than its 16-byte tag")
        }
        let opened = try ChaCha20Poly1305.open(key: key, nonce: try nonceBytes(), ciphertext: ciphertext)
        nonce += 1
        return opened
    }

    /// The 12-byte nonce for the current counter, or `nonceExhausted` once the counter reaches
    /// 2^64 − 1, before it could wrap.
    private func nonceBytes() throws(NoiseError) -> [UInt8] {
        guard nonce < UInt64.max else {
            throw NoiseError(.nonceExhausted, kind: .usage, "the Noise cipher state has used every nonce")
        }
        return Self.nonceBytes(nonce)
    }

    static func nonceBytes(_ counter: UInt64) -> [UInt8] {
        [0, 0, 0, 0] + (0..<8).map { UInt8(truncatingIfNeeded: counter >> (8 * UInt64($0))) }
    }

    /// Tests only: a cipher state whose counter starts at `nonce`, to reach the end of the range.
    package convenience init(key: [UInt8], nonce: UInt64) {
        self.init(key: key)
        self.nonce = nonce
    }
}
