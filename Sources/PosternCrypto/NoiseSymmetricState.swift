/// Noise's SymmetricState (revision 34 §5.2) for Noise_*_25519_ChaChaPoly_BLAKE2s: the chaining key,
/// the handshake hash and the handshake's key with its counter. Both NK roles drive one.
struct NoiseSymmetricState {
    static let protocolName = Array("Noise_NK_25519_ChaChaPoly_BLAKE2s".utf8)

    private(set) var chainingKey: [UInt8]
    private(set) var handshakeHash: [UInt8]
    private var key: [UInt8]?
    private var nonce: UInt64 = 0

    /// InitializeSymmetric: a name longer than HASHLEN is hashed, a shorter one zero-padded. This
    /// name is 33 bytes, so it is hashed.
    init(protocolName: [UInt8] = Self.protocolName) {
        handshakeHash = protocolName.count <= BLAKE2s.hashLength
            ? protocolName + [UInt8](repeating: 0, count: BLAKE2s.hashLength - protocolName.count)
            : BLAKE2s.hash(protocolName)
        chainingKey = handshakeHash
    }

    mutating func mixHash(_ data: [UInt8]) {
        handshakeHash = BLAKE2s.hash(handshakeHash, data)
    }

    mutating func mixKey(_ inputKeyMaterial: [UInt8]) {
        let outputs = BLAKE2s.hkdf(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, outputCount: 2)
        chainingKey = outputs[0]
        key = outputs[1]  // HASHLEN is 32, the key's own length: no truncation
        nonce = 0
    }

    /// EncryptAndHash: sealed with the handshake hash as associated data once there is a key,
    /// the plaintext itself before.
    mutating func encryptAndHash(_ plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        var ciphertext = plaintext
        if let key {
            ciphertext = try ChaCha20Poly1305.seal(key: key, nonce: NoiseCipherState.nonceBytes(nonce),
                                                   associatedData: handshakeHash, plaintext: plaintext)
            nonce += 1  // at most one message per key in a handshake: never near the end
        }
        mixHash(ciphertext)
        return ciphertext
    }

    mutating func decryptAndHash(_ ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        var plaintext = ciphertext
        if let key {
            plaintext = try ChaCha20Poly1305.open(key: key, nonce: NoiseCipherState.nonceBytes(nonce),
                                                  associatedData: handshakeHash, ciphertext: ciphertext)
            nonce += 1
        }
        mixHash(ciphertext)
        return plaintext
    }

    /// Split: the initiator's sending state first, the responder's sending state second.
    func split() -> (NoiseCipherState, NoiseCipherState) {
        let outputs = BLAKE2s.hkdf(chainingKey: chainingKey, inputKeyMaterial: [], outputCount: 2)
        return (NoiseCipherState(key: outputs[0]), NoiseCipherState(key: outputs[1]))
    }
}
