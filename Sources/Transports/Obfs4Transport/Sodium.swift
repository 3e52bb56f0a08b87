import PosternCrypto
internal import CSodium
import PosternSystem
import TransportBase

// The libsodium boundary for obfs4's own primitives (X25519, secretbox, SipHash): every call goes
// through these helpers, which check results and turn failures into TransportError; nothing else in
// the module touches CSodium. Digests, HMAC, HKDF and randomness are PosternCrypto's, which also
// initialises libsodium once for the process.

extension TransportError.Code {
    public static let cryptoFailure = Self(rawValue: "obfs4-crypto-failure")
}

package enum Sodium {
    static func ensureInitialised() throws(TransportError) {
        guard LibSodium.isReady else {
            throw TransportError(code: .cryptoFailure, kind: .internal, message: "libsodium failed to initialise")
        }
    }

    /// X25519(scalar, point). libsodium clamps the scalar; an all-zero result is an error.
    static func x25519(scalar: [UInt8], point: [UInt8]) throws(TransportError) -> [UInt8] {
        precondition(scalar.count == 32 && point.count == 32)
        var shared = [UInt8](repeating: 0, count: 32)
        let result = shared.withUnsafeMutableBufferPointer { output in
            scalar.withUnsafeBufferPointer { s in
                point.withUnsafeBufferPointer { p in crypto_scalarmult_curve25519(output.baseAddress!, s.baseAddress!, p.baseAddress!) }
            }
        }
        guard result == 0 else {
            throw TransportError(code: .cryptoFailure, kind: .protocolViolation, message: "X25519 produced the all-zero point")
        }
        return shared
    }

    package static func x25519Base(scalar: [UInt8]) throws(TransportError) -> [UInt8] {
        var publicKey = [UInt8](repeating: 0, count: 32)
        let result = publicKey.withUnsafeMutableBufferPointer { output in
            scalar.withUnsafeBufferPointer { crypto_scalarmult_curve25519_base(output.baseAddress!, $0.baseAddress!) }
        }
        guard result == 0 else {
            throw TransportError(code: .cryptoFailure, kind: .internal, message: "X25519 base multiplication failed")
        }
        return publicKey
    }

    /// Compressed Edwards point s·B for an already clamped scalar (no further clamping).
    static func ed25519BaseNoClamp(scalar: [UInt8]) throws(TransportError) -> [UInt8] {
        var point = [UInt8](repeating: 0, count: 32)
        let result = point.withUnsafeMutableBufferPointer { output in
            scalar.withUnsafeBufferPointer { crypto_scalarmult_ed25519_base_noclamp(output.baseAddress!, $0.baseAddress!) }
        }
        guard result == 0 else {
            throw TransportError(code: .cryptoFailure, kind: .internal, message: "Ed25519 base multiplication failed")
        }
        return point
    }

    /// Edwards point addition on compressed points.
    static func ed25519Add(_ p: [UInt8], _ q: [UInt8]) throws(TransportError) -> [UInt8] {
        var sum = [UInt8](repeating: 0, count: 32)
        let result = sum.withUnsafeMutableBufferPointer { output in
            p.withUnsafeBufferPointer { a in
                q.withUnsafeBufferPointer { b in crypto_core_ed25519_add(output.baseAddress!, a.baseAddress!, b.baseAddress!) }
            }
        }
        guard result == 0 else {
            throw TransportError(code: .cryptoFailure, kind: .internal, message: "Ed25519 point addition failed")
        }
        return sum
    }

    /// Constant-time equality of equal-length byte strings.
    static func constantTimeEqual(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }

    static let secretboxKeyBytes = Int(crypto_secretbox_KEYBYTES)
    static let secretboxNonceBytes = Int(crypto_secretbox_NONCEBYTES)
    static let secretboxTagBytes = Int(crypto_secretbox_MACBYTES)

    /// Seals in place: `box` is tag(16) | plaintext, and becomes tag | ciphertext. (libsodium's
    /// secretbox_easy writes the ciphertext at output + 16, which here is the plaintext itself, the
    /// one overlap it processes without moving bytes.)
    static func secretboxSealInPlace(box: UnsafeMutableBufferPointer<UInt8>, nonce: UnsafePointer<UInt8>, key: UnsafePointer<UInt8>) {
        precondition(box.count >= secretboxTagBytes)
        let base = box.baseAddress!
        let result = crypto_secretbox_easy(base, base + secretboxTagBytes, UInt64(box.count - secretboxTagBytes), nonce, key)
        precondition(result == 0, "crypto_secretbox_easy cannot fail for valid lengths")
    }

    /// Opens a tag-first box in place: on success `box[16...]` holds the plaintext; false (and
    /// `box` untouched) if authentication fails.
    static func secretboxOpenInPlace(box: UnsafeMutableBufferPointer<UInt8>, nonce: UnsafePointer<UInt8>, key: UnsafePointer<UInt8>) -> Bool {
        precondition(box.count >= secretboxTagBytes)
        let base = box.baseAddress!
        return crypto_secretbox_open_easy(base + secretboxTagBytes, base, UInt64(box.count), nonce, key) == 0
    }

    /// One-shot SipHash-2-4 (used by tests to cross-check the streaming implementation).
    static func sipHash24(key: [UInt8], message: [UInt8]) -> UInt64 {
        var out = [UInt8](repeating: 0, count: 8)
        _ = out.withUnsafeMutableBufferPointer { output in
            message.withUnsafeBufferPointer { m in
                key.withUnsafeBufferPointer { crypto_shorthash_siphash24(output.baseAddress!, m.baseAddress, UInt64(m.count), $0.baseAddress!) }
            }
        }
        return out.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self).littleEndian }
    }
}
