/// The initiator (client) of Noise_NK_25519_ChaChaPoly_BLAKE2s (Noise revision 34, pattern NK):
///
///     <- s
///     ...
///     -> e, es
///     <- e, ee
///
/// The client knows the server's static public key beforehand; the server learns nothing about the
/// client. Use: ``writeHandshake(payload:)``, send its bytes, then hand the server's answer to
/// ``readHandshake(_:)``, which gives the two transport cipher states. Any failure ends the
/// handshake: every later call throws `wrongState`.
///
/// One owner drives it in order; it is not `Sendable`.
public final class NoiseNKInitiator {
    /// Bytes a handshake message adds to its payload: the 32-byte ephemeral key and the payload's tag.
    public static let handshakeOverhead = X25519.keyLength + ChaCha20Poly1305.tagLength
    /// The largest handshake payload within Noise's 65535-byte messages.
    public static let maximumPayloadLength = NoiseCipherState.maximumMessageLength - handshakeOverhead

    private enum Stage { case start, awaitingResponse, done, failed }

    private var stage = Stage.start
    private var symmetric: NoiseSymmetricState
    private let serverPublicKey: [UInt8]
    private var ephemeralPrivateKey: [UInt8]
    /// The handshake hash (Noise §11.2, channel binding); final once ``readHandshake(_:)`` succeeded.
    public var handshakeHash: [UInt8] { symmetric.handshakeHash }
    /// The payload the responder sent in its handshake message (empty in dnstt).
    public private(set) var responderPayload: [UInt8] = []

    /// An initiator for the server whose X25519 public key is `serverPublicKey` (32 bytes), with the
    /// `prologue` both sides must agree on (dnstt: `dnstt 2020-04-13`).
    public convenience init(serverPublicKey: [UInt8], prologue: [UInt8] = []) throws(NoiseError) {
        try self.init(serverPublicKey: serverPublicKey, prologue: prologue, ephemeralPrivateKey: X25519.generatePrivateKey())
    }

    /// Tests only: a fixed ephemeral private key, to reproduce another implementation's messages.
    package init(serverPublicKey: [UInt8], prologue: [UInt8] = [], ephemeralPrivateKey: [UInt8]) throws(NoiseError) {
        guard serverPublicKey.count == X25519.keyLength else {
            throw NoiseError(.invalidKeyLength, kind: .invalidInput, "the server's Noise public key is 32 bytes")
        }
        guard ephemeralPrivateKey.count == X25519.keyLength else {
            throw NoiseError(.invalidKeyLength, kind: .invalidInput, "a Noise ephemeral key is 32 bytes")
        }
        self.serverPublicKey = serverPublicKey
        self.ephemeralPrivateKey = ephemeralPrivateKey
        symmetric = NoiseSymmetricState()
        symmetric.mixHash(prologue)
        symmetric.mixHash(serverPublicKey)  // the pre-message "<- s"
    }

    /// The first handshake message, `-> e, es`: the ephemeral public key and the sealed `payload`
    /// (at most ``maximumPayloadLength`` bytes; 48 bytes in all when it is empty).
    public func writeHandshake(payload: [UInt8] = []) throws(NoiseError) -> [UInt8] {
        guard stage == .start else {
            throw NoiseError(.wrongState, kind: .usage, "the Noise handshake's first message was already written")
        }
        guard payload.count <= Self.maximumPayloadLength else {
            throw NoiseError(.messageTooLarge, kind: .invalidInput, "a Noise handshake payload is at most \(Self.maximumPayloadLength) bytes")
        }
        do throws(NoiseError) {
            let ephemeralPublicKey = try X25519.publicKey(privateKey: ephemeralPrivateKey)
            symmetric.mixHash(ephemeralPublicKey)
            symmetric.mixKey(try X25519.sharedSecret(privateKey: ephemeralPrivateKey, publicKey: serverPublicKey))
            let sealed = try symmetric.encryptAndHash(payload)
            stage = .awaitingResponse
            return ephemeralPublicKey + sealed
        } catch {
            fail()
            throw error
        }
    }

    /// Reads the responder's message, `<- e, ee`, and splits: `send` seals what the initiator
    /// sends, `receive` opens what the responder sends. The responder's payload is then in
    /// ``responderPayload``.
    public func readHandshake(_ message: [UInt8]) throws(NoiseError) -> (send: NoiseCipherState, receive: NoiseCipherState) {
        guard stage == .awaitingResponse else {
            throw NoiseError(.wrongState, kind: .usage, "the Noise handshake is not waiting for the responder's message")
        }
        do throws(NoiseError) {
            guard message.count >= Self.handshakeOverhead, message.count <= NoiseCipherState.maximumMessageLength else {
                throw NoiseError(.badMessageLength, "the responder's Noise handshake message has \(message.count) bytes (48 to 65535 expected)")
            }
            let responderEphemeral = Array(message[0..<X25519.keyLength])
            symmetric.mixHash(responderEphemeral)
            symmetric.mixKey(try X25519.sharedSecret(privateKey: ephemeralPrivateKey, publicKey: responderEphemeral))
            responderPayload = try symmetric.decryptAndHash(Array(message[X25519.keyLength...]))
            let (initiatorToResponder, responderToInitiator) = symmetric.split()
            stage = .done
            forgetEphemeral()
            return (send: initiatorToResponder, receive: responderToInitiator)
        } catch {
            fail()
            throw error
        }
    }

    private func fail() {
        stage = .failed
        forgetEphemeral()
    }

    private func forgetEphemeral() {
        for index in ephemeralPrivateKey.indices { ephemeralPrivateKey[index] = 0 }
    }
}
