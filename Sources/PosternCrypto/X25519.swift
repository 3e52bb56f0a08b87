internal import CSodium

/// X25519 (RFC 7748) from libsodium, for Noise's DH functions.
public enum X25519 {
    /// Public and private keys and the shared secret are all 32 bytes.
    public static let keyLength = 32

    /// A fresh private key from the CSPRNG (clamped by the scalar multiplication, not here).
    public static func generatePrivateKey() -> [UInt8] {
        SecureRandom.bytes(keyLength)
    }

    /// The public key of `privateKey`.
    public static func publicKey(privateKey: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard privateKey.count == keyLength else {
            throw NoiseError(.invalidKeyLength, kind: .invalidInput, "an X25519 private key is 32 bytes")
        }
        guard LibSodium.isReady else { throw NoiseError(.libraryFailure, kind: .failure, "libsodium did not initialise") }
        var output = [UInt8](repeating: 0, count: keyLength)
        guard crypto_scalarmult_curve25519_base(&output, privateKey) == 0 else {
            throw NoiseError(.libraryFailure, kind: .failure, "X25519 refused the private key")
        }
        return output
    }

    /// The shared secret of `privateKey` and a peer's `publicKey`. An all-zero result (a peer key of
    /// low order, which would make the secret public) is refused, as Noise §12.1 allows and RFC 7748
    /// §6.1 recommends; libsodium reports it.
    public static func sharedSecret(privateKey: [UInt8], publicKey: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard privateKey.count == keyLength, publicKey.count == keyLength else {
            throw NoiseError(.invalidKeyLength, kind: .invalidInput, "X25519 keys are 32 bytes")
        }
        guard LibSodium.isReady else { throw NoiseError(.libraryFailure, kind: .failure, "libsodium did not initialise") }
        var output = [UInt8](repeating: 0, count: keyLength)
        guard crypto_scalarmult_curve25519(&output, privateKey, publicKey) == 0 else {
            throw NoiseError(.weakPublicKey, "the peer's X25519 public key gives an all-zero shared secret")
        }
        return output
    }
}
