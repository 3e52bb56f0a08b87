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

    /// Seals in place: `box` is tag(16) | plaintext, and becomes tag | ciphertext, with the whole
    /// 24-byte nonce (libsodium's crypto_secretbox_easy as it is; the framing uses the subkey form
    /// below, and Obfs4CipherTests holds the two to the same bytes). (libsodium's
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

    /// HSalsa20(key, noncePrefix): XSalsa20's subkey for every 24-byte nonce that begins with these
    /// 16 bytes. obfs4's nonces are noncePrefix | counter, so one direction needs it only once, where
    /// crypto_secretbox_easy/_open_easy derive it again for every frame.
    static func xsalsa20Subkey(key: [UInt8], noncePrefix: [UInt8]) -> [UInt8] {
        precondition(key.count == secretboxKeyBytes && noncePrefix.count == 16)
        var subkey = [UInt8](repeating: 0, count: 32)
        let result = subkey.withUnsafeMutableBufferPointer { output in
            noncePrefix.withUnsafeBufferPointer { n in
                key.withUnsafeBufferPointer { crypto_core_hsalsa20(output.baseAddress!, n.baseAddress!, $0.baseAddress!, nil) }
            }
        }
        precondition(result == 0, "crypto_core_hsalsa20 cannot fail")
        return subkey
    }

    /// Seals in place as `secretboxSealInPlace` does, for the nonce noncePrefix | counter (8 bytes,
    /// big-endian), from the prefix's `subkey` (`xsalsa20Subkey`): the same bytes as
    /// crypto_secretbox_easy, from libsodium's own primitives in the order its secretbox uses them
    /// (NaCl's XSalsa20-Poly1305: the first 32 bytes of the Salsa20 keystream are the Poly1305
    /// key, the message is XORed with the keystream after them, the tag is over the ciphertext).
    /// Per frame this spares libsodium's HSalsa20 and one of its two computations of the first
    /// keystream block. Vectors: Obfs4CipherTests checks it against crypto_secretbox_easy.
    static func secretboxSealInPlace(box: UnsafeMutableBufferPointer<UInt8>, counter: UInt64, subkey: UnsafePointer<UInt8>) {
        precondition(box.count >= secretboxTagBytes)
        let tag = box.baseAddress!
        let message = tag + secretboxTagBytes
        let length = box.count - secretboxTagBytes
        withKeystreamStart(counter: counter, subkey: subkey) { nonce, block in
            xorAfterFirstKeystreamBlock(message, length: length, block: block, nonce: nonce, subkey: subkey)
            let result = crypto_onetimeauth_poly1305(tag, message, UInt64(length), block)
            precondition(result == 0, "crypto_onetimeauth_poly1305 cannot fail")
        }
    }

    /// Opens in place as `secretboxOpenInPlace` does (same nonce and subkey as the seal above):
    /// the tag is verified first (constant time, crypto_onetimeauth_poly1305_verify) and the box is
    /// left untouched when it is wrong.
    static func secretboxOpenInPlace(box: UnsafeMutableBufferPointer<UInt8>, counter: UInt64, subkey: UnsafePointer<UInt8>) -> Bool {
        precondition(box.count >= secretboxTagBytes)
        let tag = box.baseAddress!
        let message = tag + secretboxTagBytes
        let length = box.count - secretboxTagBytes
        return withKeystreamStart(counter: counter, subkey: subkey) { nonce, block in
            guard crypto_onetimeauth_poly1305_verify(tag, message, UInt64(length), block) == 0 else { return false }
            xorAfterFirstKeystreamBlock(message, length: length, block: block, nonce: nonce, subkey: subkey)
            return true
        }
    }

    /// Calls `body` with the 8-byte Salsa20 nonce (the counter, big-endian) and the first 64 bytes
    /// of its keystream, which are wiped afterwards (the first half is a Poly1305 key).
    private static func withKeystreamStart<Result>(counter: UInt64, subkey: UnsafePointer<UInt8>,
                                                   _ body: (UnsafePointer<UInt8>, UnsafeMutablePointer<UInt8>) -> Result) -> Result {
        var nonce = counter.bigEndian
        return withUnsafeBytes(of: &nonce) { nonceBytes in
            let n = nonceBytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { block in
                let first = block.baseAddress!
                _ = crypto_stream_salsa20(first, 64, n, subkey)
                defer { sodium_memzero(first, 64) }
                return body(n, first)
            }
        }
    }

    /// XORs `message` in place with the keystream from byte 32 on: its first 32 bytes with the
    /// second half of `block`, the rest from block 1 (crypto_stream_salsa20_xor_ic, in place).
    private static func xorAfterFirstKeystreamBlock(_ message: UnsafeMutablePointer<UInt8>, length: Int, block: UnsafeMutablePointer<UInt8>,
                                                    nonce: UnsafePointer<UInt8>, subkey: UnsafePointer<UInt8>) {
        for index in 0..<min(length, 32) { message[index] ^= block[32 + index] }
        if length > 32 {
            _ = crypto_stream_salsa20_xor_ic(message + 32, message + 32, UInt64(length - 32), nonce, 1, subkey)
        }
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
