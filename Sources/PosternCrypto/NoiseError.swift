import PosternSystem

/// Why a Noise handshake or transport message failed.
///
/// The shape of every public Postern error (``CodedError``): an extensible ``Code``, a coarse
/// ``Kind`` and a message. Messages never hold key material or peer bytes.
public typealias NoiseError = CodedError<NoiseErrorDomain>

/// Kinds: PosternSystem's `invalidInput` (a key or payload of the wrong size from the caller),
/// `protocolViolation` (the peer's bytes: a wrong length, a failed tag, a low-order key) and `usage`
/// (a handshake step out of order, a cipher state used up).
public enum NoiseErrorDomain: ErrorDomain {
    public static var defaultKind: ErrorKind<Self> { .protocolViolation }
}

extension NoiseError.Code {
    /// A key is not 32 bytes.
    public static let invalidKeyLength = Self("noise-invalid-key-length")
    /// A handshake message has the wrong length for its pattern.
    public static let badMessageLength = Self("noise-bad-message-length")
    /// A message would exceed Noise's 65535 bytes (§3).
    public static let messageTooLarge = Self("noise-message-too-large")
    /// A ciphertext is shorter than its 16-byte tag.
    public static let messageTooShort = Self("noise-message-too-short")
    /// The ChaCha20-Poly1305 tag did not verify (wrong key, tampered or reordered bytes).
    public static let authenticationFailed = Self("noise-authentication-failed")
    /// A Diffie-Hellman result was all zeros: the peer's public key is of low order.
    public static let weakPublicKey = Self("noise-weak-public-key")
    /// The cipher state's 64-bit nonce is used up (2^64 − 1 is reserved by Noise).
    public static let nonceExhausted = Self("noise-nonce-exhausted")
    /// A handshake step was called out of order, again, or after a failure.
    public static let wrongState = Self("noise-wrong-state")
    /// libsodium did not initialise or refused an operation.
    public static let libraryFailure = Self("noise-library-failure")
}
