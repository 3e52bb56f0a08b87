internal import CSodium

/// ChaCha20-Poly1305 with a 96-bit nonce (RFC 8439, libsodium's "IETF" variant), for Noise's cipher
/// functions.
public enum ChaCha20Poly1305 {
    public static let keyLength = 32
    public static let nonceLength = 12
    public static let tagLength = 16

    /// `plaintext` encrypted and authenticated with `associatedData`: ciphertext ‖ 16-byte tag.
    public static func seal(key: [UInt8], nonce: [UInt8], associatedData: [UInt8] = [],
                            plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        try check(key: key, nonce: nonce)
        var output = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        var written: UInt64 = 0
        let result = crypto_aead_chacha20poly1305_ietf_encrypt(
            &output, &written, plaintext, UInt64(plaintext.count), associatedData, UInt64(associatedData.count),
            nil, nonce, key)
        guard result == 0, written == UInt64(output.count) else {
            throw NoiseError(.libraryFailure, kind: .failure, "ChaCha20-Poly1305 encryption failed")
        }
        return output
    }

    /// The plaintext of `ciphertext` (ciphertext ‖ tag), or `authenticationFailed`.
    public static func open(key: [UInt8], nonce: [UInt8], associatedData: [UInt8] = [],
                            ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        try check(key: key, nonce: nonce)
        guard ciphertext.count >= tagLength else {
            throw NoiseError(.messageTooShort, "a ciphertext is shorter than its 16-byte tag")
        }
        var output = [UInt8](repeating: 0, count: ciphertext.count - tagLength)
        var written: UInt64 = 0
        let result = crypto_aead_chacha20poly1305_ietf_decrypt(
            &output, &written, nil, ciphertext, UInt64(ciphertext.count), associatedData, UInt64(associatedData.count),
            nonce, key)
        guard result == 0, written == UInt64(output.count) else {
            throw NoiseError(.authenticationFailed, "a message did not authenticate")
        }
        return output
    }

    private static func check(key: [UInt8], nonce: [UInt8]) throws(NoiseError) {
        guard key.count == keyLength else {
            throw NoiseError(.invalidKeyLength, kind: .invalidInput, "a ChaCha20-Poly1305 key is 32 bytes")
        }
        guard nonce.count == nonceLength else {
            throw NoiseError(.invalidKeyLength, kind: .invalidInput, "a ChaCha20-Poly1305 nonce is 12 bytes")
        }
        guard LibSodium.isReady else { throw NoiseError(.libraryFailure, kind: .failure, "libsodium did not initialise") }
    }
}
