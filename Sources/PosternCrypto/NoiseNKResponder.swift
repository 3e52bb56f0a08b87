/// The responder (server) of Noise_NK_25519_ChaChaPoly_BLAKE2s, the peer of ``NoiseNKInitiator``:
/// ``readHandshake(_:)`` takes the client's `-> e, es`, ``writeHandshake(payload:)`` answers
/// `<- e, ee` and gives the transport cipher states. Any failure ends the handshake: every later
/// call throws `wrongState`.
///
/// One owner drives it in order; it is not `Sendable`.
public final class NoiseNKResponder {
    private enum Stage { case start, readyToAnswer, done, failed }

    private var stage = Stage.start
    private var symmetric: NoiseSymmetricState
    private let staticPrivateKey: [UInt8]
    private var ephemeralPrivateKey: [UInt8]
    private var initiatorEphemeral: [UInt8] = []
    /// The public key clients must know (the `pubkey=` of a dnstt bridge line).
    public let staticPublicKey: [UInt8]
    /// The handshake hash (Noise §11.2); final once ``writeHandshake(payload:)`` succeeded.
    public var handshakeHash: [UInt8] { symmetric.handshakeHash }

    /// A responder with the X25519 static key `staticPrivateKey` (32 bytes) and the `prologue`
    /// both sides must agree on.
    public convenience init(staticPrivateKey: [UInt8], prologue: [UInt8] = []) throws(NoiseError) {
        try self.init(staticPrivateKey: staticPrivateKey, prologue: prologue, ephemeralPrivateKey: X25519.generatePrivateKey())
    }

    /// Tests only: a fixed ephemeral private key, to reproduce another implementation's messages.
    package init(staticPrivateKey: [UInt8], prologue: [UInt8] = [], ephemeralPrivateKey: [UInt8]) throws(NoiseError) {
        guard ephemeralPrivateKey.count == X25519.keyLength else {
            throw NoiseError(.invalidKeyLength, kind: .invalidInput, "a Noise ephemeral key is 32 bytes")
        }
        staticPublicKey = try X25519.publicKey(privateKey: staticPrivateKey)
        self.staticPrivateKey = staticPrivateKey
        self.ephemeralPrivateKey = ephemeralPrivateKey
        symmetric = NoiseSymmetricState()
        symmetric.mixHash(prologue)
        symmetric.mixHash(staticPublicKey)  // the pre-message "<- s"
    }

    /// Reads the initiator's message, `-> e, es`, and returns its payload.
    public func readHandshake(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard stage == .start else {
            throw NoiseError(.wrongState, kind: .usage, "the Noise handshake's first message was already read")
        }
        do throws(NoiseError) {
            guard message.count >= NoiseNKInitiator.handshakeOverhead, message.count <= NoiseCipherState.maximumMessageLength else {
                throw NoiseError(.badMessageLength, "the initiator's Noise handshake message has \(message.count) bytes (48 to 65535 expected)")
            }
            initiatorEphemeral = Array(message[0..<X25519.keyLength])
            symmetric.mixHash(initiatorEphemeral)
            symmetric.mixKey(try X25519.sharedSecret(privateKey: staticPrivateKey, publicKey: initiatorEphemeral))
            let payload = try symmetric.decryptAndHash(Array(message[X25519.keyLength...]))
            stage = .readyToAnswer
            return payload
        } catch {
            fail()
            throw error
        }
    }

    /// The answer, `<- e, ee`, sealing `payload` (at most ``NoiseNKInitiator/maximumPayloadLength``
    /// bytes), and the split: `send` seals what the responder sends, `receive` opens what the
    /// initiator sends.
    public func writeHandshake(payload: [UInt8] = []) throws(NoiseError)
        -> (message: [UInt8], send: NoiseCipherState, receive: NoiseCipherState) {
        guard stage == .readyToAnswer else {
            throw NoiseError(.wrongState, kind: .usage, "the Noise handshake is not ready to answer")
        }
        guard payload.count <= NoiseNKInitiator.maximumPayloadLength else {
            throw NoiseError(.messageTooLarge, kind: .invalidInput,
                             "a Noise handshake payload is at most \(NoiseNKInitiator.maximumPayloadLength) bytes")
        }
        do throws(NoiseError) {
            let ephemeralPublicKey = try X25519.publicKey(privateKey: ephemeralPrivateKey)
            symmetric.mixHash(ephemeralPublicKey)
            symmetric.mixKey(try X25519.sharedSecret(privateKey: ephemeralPrivateKey, publicKey: initiatorEphemeral))
            let sealed = try symmetric.encryptAndHash(payload)
            let (initiatorToResponder, responderToInitiator) = symmetric.split()
            stage = .done
            forgetEphemeral()
            return (message: ephemeralPublicKey + sealed, send: responderToInitiator, receive: initiatorToResponder)
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
