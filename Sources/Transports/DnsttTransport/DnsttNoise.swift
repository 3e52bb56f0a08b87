import PosternCrypto

// dnstt's Noise layer between KCP and smux (the dnstt protocol notes §1, from dnstt's noise/noise.go):
// Noise_NK_25519_ChaChaPoly_BLAKE2s with the prologue "dnstt 2020-04-13", the client the initiator.
// `-> e, es` then `<- e, ee`, both payloads empty, so each handshake message is 48 bytes. Every
// Noise message, handshake or transport, travels on the KCP byte stream as
//
//     length(2, big-endian, unlike KCP's and smux's fields) | message(length)
//
// Transport messages carry at most 4096 bytes of plaintext each (a longer write is cut into several
// messages), with empty associated data and the nonce 4 zero bytes ‖ 64-bit little-endian counter
// (PosternCrypto's NoiseCipherState). No rekey.

/// The constants and framing of dnstt's Noise layer.
public enum DnsttNoise {
    public static let prologue = Array("dnstt 2020-04-13".utf8)
    /// Plaintext bytes per transport message at most (dnstt's writer cuts there).
    public static let maximumPlaintextChunk = 4096
    /// The length of each handshake message with an empty payload.
    public static let handshakeMessageLength = NoiseNKInitiator.handshakeOverhead

    /// The initiator for a server whose `pubkey=` is `serverPublicKey`, with dnstt's prologue.
    public static func initiator(serverPublicKey: [UInt8]) throws(DnsttError) -> NoiseNKInitiator {
        do throws(NoiseError) {
            return try NoiseNKInitiator(serverPublicKey: serverPublicKey, prologue: prologue)
        } catch {
            throw DnsttError(noise: error)
        }
    }

    /// The first handshake message, framed for the KCP stream (2 + 48 bytes).
    public static func firstMessage(_ initiator: NoiseNKInitiator) throws(DnsttError) -> [UInt8] {
        do throws(NoiseError) {
            return frame(try initiator.writeHandshake(payload: []))
        } catch {
            throw DnsttError(noise: error)
        }
    }

    /// Reads the server's handshake message (a frame's contents) and gives the cipher states. The
    /// server's payload must be empty, as dnstt's client requires.
    public static func finish(_ initiator: NoiseNKInitiator, message: [UInt8]) throws(DnsttError)
        -> (send: NoiseCipherState, receive: NoiseCipherState) {
        let states: (send: NoiseCipherState, receive: NoiseCipherState)
        do throws(NoiseError) {
            states = try initiator.readHandshake(message)
        } catch {
            throw DnsttError(noise: error)
        }
        guard initiator.responderPayload.isEmpty else {
            throw DnsttError(code: .noiseFrameMalformed, kind: .protocolViolation,
                             message: "the dnstt server's Noise handshake message carries a payload (dnstt's is empty)")
        }
        return states
    }

    /// `message` behind its 2-byte big-endian length. A message is at most 65535 bytes (Noise's cap,
    /// which everything here stays under), so the length always fits.
    public static func frame(_ message: [UInt8]) -> [UInt8] {
        precondition(message.count <= NoiseCipherState.maximumMessageLength, "a Noise message is at most 65535 bytes")
        return [UInt8(message.count >> 8), UInt8(message.count & 0xFF)] + message
    }

    /// `plaintext` sealed in messages of at most ``maximumPlaintextChunk`` bytes each, every one
    /// framed; empty plaintext gives no bytes (dnstt writes nothing for an empty write).
    public static func seal(_ plaintext: [UInt8], with cipher: NoiseCipherState) throws(DnsttError) -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        while index < plaintext.count {
            let end = min(index + maximumPlaintextChunk, plaintext.count)
            do throws(NoiseError) {
                out += frame(try cipher.encrypt(Array(plaintext[index..<end])))
            } catch {
                throw DnsttError(noise: error)
            }
            index = end
        }
        return out
    }

    /// The plaintext of one transport message (a frame's contents).
    public static func open(_ message: [UInt8], with cipher: NoiseCipherState) throws(DnsttError) -> [UInt8] {
        do throws(NoiseError) {
            return try cipher.decrypt(message)
        } catch {
            throw DnsttError(noise: error)
        }
    }
}
