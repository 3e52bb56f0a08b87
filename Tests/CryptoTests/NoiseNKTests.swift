import Foundation
import PosternCrypto
import PosternSystem
import Testing

/// Vectors/noise-nk-flynn.json, written by Tests/Support/noise-vectors (flynn/noise 1.0.0, an
/// independent Go implementation) with fixed ephemeral keys.
struct NoiseNKVectors: Decodable {
    struct Transport: Decodable { var plaintext: String; var ciphertext: String }
    struct Case: Decodable {
        var name: String
        var prologue: String
        var responderStaticPrivate: String
        var responderStaticPublic: String
        var initiatorEphemeralPrivate: String
        var responderEphemeralPrivate: String
        var initiatorPayload: String
        var responderPayload: String
        var message1: String
        var message2: String
        var handshakeHash: String
        var initiatorToResponder: [Transport]
        var responderToInitiator: [Transport]
    }
    struct Refused: Decodable { var name: String; var prologue: String; var responderStaticPrivate: String; var message1: String }
    var `protocol`: String
    var cases: [Case]
    var refused: [Refused]

    static func load() throws -> NoiseNKVectors {
        let url = try #require(Bundle.module.url(forResource: "noise-nk-flynn", withExtension: "json", subdirectory: "Vectors"))
        return try JSONDecoder().decode(NoiseNKVectors.self, from: Data(contentsOf: url))
    }
}

/// The code a throwing call failed with, or nil when it did not throw.
func noiseCode<T>(_ body: () throws(NoiseError) -> T) -> NoiseError.Code? {
    do throws(NoiseError) {
        _ = try body()
        return nil
    } catch {
        return error.code
    }
}

@Suite struct NoiseNKVectorTests {
    @Test func vectorsAreForThisSuite() throws {
        let vectors = try NoiseNKVectors.load()
        #expect(vectors.protocol == "Noise_NK_25519_ChaChaPoly_BLAKE2s")
        #expect(vectors.cases.map(\.name) == ["dnstt", "empty-prologue-with-payloads", "derived-keys"])
    }

    /// Swift initiator against flynn's responder: the same first message byte for byte, flynn's
    /// answer accepted, the same handshake hash, and the transport messages of both directions.
    @Test(arguments: ["dnstt", "empty-prologue-with-payloads", "derived-keys"])
    func swiftInitiatorMatchesFlynn(name: String) throws {
        let vector = try #require(try NoiseNKVectors.load().cases.first { $0.name == name })
        #expect(try X25519.publicKey(privateKey: Hex.decode(vector.responderStaticPrivate)) == Hex.decode(vector.responderStaticPublic))
        let initiator = try NoiseNKInitiator(serverPublicKey: Hex.decode(vector.responderStaticPublic), prologue: Hex.decode(vector.prologue),
                                             ephemeralPrivateKey: Hex.decode(vector.initiatorEphemeralPrivate))
        #expect(Hex.encode(try initiator.writeHandshake(payload: Hex.decode(vector.initiatorPayload))) == vector.message1)
        let (send, receive) = try initiator.readHandshake(Hex.decode(vector.message2))
        #expect(Hex.encode(initiator.responderPayload) == vector.responderPayload)
        #expect(Hex.encode(initiator.handshakeHash) == vector.handshakeHash)
        for message in vector.initiatorToResponder {
            #expect(Hex.encode(try send.encrypt(Hex.decode(message.plaintext))) == message.ciphertext)
        }
        for message in vector.responderToInitiator {
            #expect(Hex.encode(try receive.decrypt(Hex.decode(message.ciphertext))) == message.plaintext)
        }
        #expect(send.nonce == UInt64(vector.initiatorToResponder.count))
    }

    /// Swift responder against flynn's initiator: flynn's first message read, the same answer byte
    /// for byte, and the transport messages of both directions.
    @Test(arguments: ["dnstt", "empty-prologue-with-payloads", "derived-keys"])
    func swiftResponderMatchesFlynn(name: String) throws {
        let vector = try #require(try NoiseNKVectors.load().cases.first { $0.name == name })
        let responder = try NoiseNKResponder(staticPrivateKey: Hex.decode(vector.responderStaticPrivate), prologue: Hex.decode(vector.prologue),
                                             ephemeralPrivateKey: Hex.decode(vector.responderEphemeralPrivate))
        #expect(Hex.encode(responder.staticPublicKey) == vector.responderStaticPublic)
        #expect(Hex.encode(try responder.readHandshake(Hex.decode(vector.message1))) == vector.initiatorPayload)
        let (message, send, receive) = try responder.writeHandshake(payload: Hex.decode(vector.responderPayload))
        #expect(Hex.encode(message) == vector.message2)
        #expect(Hex.encode(responder.handshakeHash) == vector.handshakeHash)
        for transport in vector.initiatorToResponder {
            #expect(Hex.encode(try receive.decrypt(Hex.decode(transport.ciphertext))) == transport.plaintext)
        }
        for transport in vector.responderToInitiator {
            #expect(Hex.encode(try send.encrypt(Hex.decode(transport.plaintext))) == transport.ciphertext)
        }
    }

    /// dnstt's handshake: both messages are 48 bytes with its empty payloads.
    @Test func dnsttMessagesAre48Bytes() throws {
        let vector = try #require(try NoiseNKVectors.load().cases.first { $0.name == "dnstt" })
        #expect(vector.prologue == Hex.encode(Array("dnstt 2020-04-13".utf8)))
        #expect(Hex.decode(vector.message1).count == 48 && Hex.decode(vector.message2).count == 48)
    }

    /// The first messages flynn's responder refuses, ours refuses too, for the reason we can name.
    @Test func refusesWhatFlynnRefuses() throws {
        let expected: [String: NoiseError.Code] = [
            "zero-ephemeral": .weakPublicKey, "order-8-ephemeral": .weakPublicKey, "tampered-tag": .authenticationFailed,
            "other-prologue": .authenticationFailed, "short": .badMessageLength,
        ]
        let refused = try NoiseNKVectors.load().refused
        #expect(Set(refused.map(\.name)) == Set(expected.keys))
        for vector in refused {
            let responder = try NoiseNKResponder(staticPrivateKey: Hex.decode(vector.responderStaticPrivate), prologue: Hex.decode(vector.prologue))
            #expect(noiseCode { () throws(NoiseError) in try responder.readHandshake(Hex.decode(vector.message1)) } == expected[vector.name],
                    "\(vector.name)")
            // A failed handshake stays failed.
            #expect(noiseCode { () throws(NoiseError) in try responder.writeHandshake() } == .wrongState)
        }
    }
}

@Suite struct NoiseNKTests {
    private static let prologue = Array("dnstt 2020-04-13".utf8)

    private func pair() throws -> (NoiseNKInitiator, NoiseNKResponder) {
        let responder = try NoiseNKResponder(staticPrivateKey: X25519.generatePrivateKey(), prologue: Self.prologue)
        let initiator = try NoiseNKInitiator(serverPublicKey: responder.staticPublicKey, prologue: Self.prologue)
        return (initiator, responder)
    }

    @Test func randomKeysRoundTripBothWays() throws {
        let (initiator, responder) = try pair()
        let message1 = try initiator.writeHandshake()
        #expect(message1.count == 48)
        #expect(try responder.readHandshake(message1) == [])
        let (message2, serverSend, serverReceive) = try responder.writeHandshake()
        #expect(message2.count == 48)
        let (clientSend, clientReceive) = try initiator.readHandshake(message2)
        #expect(initiator.handshakeHash == responder.handshakeHash)
        for length in [0, 1, 15, 16, 17, 4096, NoiseCipherState.maximumPlaintextLength] {
            let up = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 31) }
            let sealed = try clientSend.encrypt(up)
            #expect(sealed.count == length + 16)
            #expect(try serverReceive.decrypt(sealed) == up)
            let down = up.reversed() as [UInt8]
            #expect(try clientReceive.decrypt(try serverSend.encrypt(down)) == down)
        }
    }

    @Test func differentServerKeyFailsTheFirstMessage() throws {
        let (initiator, _) = try pair()
        let other = try NoiseNKResponder(staticPrivateKey: X25519.generatePrivateKey(), prologue: Self.prologue)
        #expect(noiseCode { () throws(NoiseError) in try other.readHandshake(try initiator.writeHandshake()) } == .authenticationFailed)
    }

    @Test func keyLengthsAreChecked() {
        for length in [0, 31, 33, 64] {
            let key = [UInt8](repeating: 9, count: length)
            #expect(noiseCode { () throws(NoiseError) in try NoiseNKInitiator(serverPublicKey: key) } == .invalidKeyLength)
            #expect(noiseCode { () throws(NoiseError) in try NoiseNKResponder(staticPrivateKey: key) } == .invalidKeyLength)
            #expect(noiseCode { () throws(NoiseError) in try X25519.sharedSecret(privateKey: key, publicKey: key) } == .invalidKeyLength)
        }
    }

    /// A low-order server key (here the point of order 1, all zeros but the first byte) gives an
    /// all-zero DH result: refused, not used.
    @Test func lowOrderServerKeyIsRefused() throws {
        var identity = [UInt8](repeating: 0, count: 32)
        identity[0] = 1
        let initiator = try NoiseNKInitiator(serverPublicKey: identity)
        #expect(noiseCode { () throws(NoiseError) in try initiator.writeHandshake() } == .weakPublicKey)
        #expect(noiseCode { () throws(NoiseError) in try initiator.writeHandshake() } == .wrongState)
    }

    @Test func lowOrderResponderEphemeralIsRefused() throws {
        let (initiator, _) = try pair()
        _ = try initiator.writeHandshake()
        #expect(noiseCode { () throws(NoiseError) in try initiator.readHandshake([UInt8](repeating: 0, count: 48)) } == .weakPublicKey)
        #expect(noiseCode { () throws(NoiseError) in try initiator.readHandshake([UInt8](repeating: 0, count: 48)) } == .wrongState)
    }

    @Test func handshakeMessageLengthsAreChecked() throws {
        for length in [0, 1, 31, 32, 47, NoiseCipherState.maximumMessageLength + 1] {
            let responder = try NoiseNKResponder(staticPrivateKey: X25519.generatePrivateKey())
            #expect(noiseCode { () throws(NoiseError) in try responder.readHandshake([UInt8](repeating: 7, count: length)) } == .badMessageLength)
            let (initiator, _) = try pair()
            _ = try initiator.writeHandshake()
            #expect(noiseCode { () throws(NoiseError) in try initiator.readHandshake([UInt8](repeating: 7, count: length)) } == .badMessageLength)
        }
        // A 49-byte message is well formed in length, so it fails on its tag.
        let (initiator, responder) = try pair()
        var message = try initiator.writeHandshake()
        message.append(0)
        #expect(noiseCode { () throws(NoiseError) in try responder.readHandshake(message) } == .authenticationFailed)
    }

    @Test func handshakePayloadsUpToTheMessageCap() throws {
        let (initiator, responder) = try pair()
        #expect(NoiseNKInitiator.maximumPayloadLength == 65535 - 48)
        let tooLong = [UInt8](repeating: 1, count: NoiseNKInitiator.maximumPayloadLength + 1)
        #expect(noiseCode { () throws(NoiseError) in try initiator.writeHandshake(payload: tooLong) } == .messageTooLarge)
        let payload = [UInt8](repeating: 2, count: NoiseNKInitiator.maximumPayloadLength)
        let message1 = try initiator.writeHandshake(payload: payload)
        #expect(message1.count == 65535)
        #expect(try responder.readHandshake(message1) == payload)
        let (message2, _, _) = try responder.writeHandshake(payload: [3, 4, 5])
        _ = try initiator.readHandshake(message2)
        #expect(initiator.responderPayload == [3, 4, 5])
    }

    @Test func stepsOutOfOrderAreRefused() throws {
        let (initiator, responder) = try pair()
        #expect(noiseCode { () throws(NoiseError) in try initiator.readHandshake([UInt8](repeating: 0, count: 48)) } == .wrongState)
        #expect(noiseCode { () throws(NoiseError) in try responder.writeHandshake() } == .wrongState)
        let message1 = try initiator.writeHandshake()
        #expect(noiseCode { () throws(NoiseError) in try initiator.writeHandshake() } == .wrongState)
        _ = try responder.readHandshake(message1)
        #expect(noiseCode { () throws(NoiseError) in try responder.readHandshake(message1) } == .wrongState)
        let (message2, _, _) = try responder.writeHandshake()
        #expect(noiseCode { () throws(NoiseError) in try responder.writeHandshake() } == .wrongState)
        _ = try initiator.readHandshake(message2)
        #expect(noiseCode { () throws(NoiseError) in try initiator.readHandshake(message2) } == .wrongState)
    }

    /// A tampered, truncated or oversized transport message fails without moving the counter, so
    /// the genuine message still opens after it.
    @Test func badTransportMessagesFailWithoutUsingANonce() throws {
        let key = [UInt8](repeating: 0x42, count: 32)
        let sender = NoiseCipherState(key: key, nonce: 0)
        let receiver = NoiseCipherState(key: key, nonce: 0)
        let sealed = try sender.encrypt(Array("hello".utf8))
        for index in sealed.indices {
            var tampered = sealed
            tampered[index] ^= 0x80
            #expect(noiseCode { () throws(NoiseError) in try receiver.decrypt(tampered) } == .authenticationFailed)
        }
        for length in 0..<16 {
            #expect(noiseCode { () throws(NoiseError) in try receiver.decrypt(Array(sealed.prefix(length))) } == .messageTooShort)
        }
        #expect(noiseCode { () throws(NoiseError) in try receiver.decrypt([UInt8](repeating: 0, count: 65536)) } == .messageTooLarge)
        #expect(noiseCode { () throws(NoiseError) in
            try sender.encrypt([UInt8](repeating: 0, count: NoiseCipherState.maximumPlaintextLength + 1))
        } == .messageTooLarge)
        #expect(receiver.nonce == 0)
        #expect(try receiver.decrypt(sealed) == Array("hello".utf8))
        #expect(receiver.nonce == 1)
        // The same message again is a replay under the next nonce: refused.
        #expect(noiseCode { () throws(NoiseError) in try receiver.decrypt(sealed) } == .authenticationFailed)
    }

    /// The counter stops before 2^64 − 1 (reserved by Noise): the last usable nonce works, then
    /// every call throws instead of wrapping to a reused nonce.
    @Test func nonceStopsBeforeWrapping() throws {
        let key = [UInt8](repeating: 0x24, count: 32)
        let sender = NoiseCipherState(key: key, nonce: UInt64.max - 1)
        let receiver = NoiseCipherState(key: key, nonce: UInt64.max - 1)
        let sealed = try sender.encrypt([1, 2, 3])
        #expect(try receiver.decrypt(sealed) == [1, 2, 3])
        #expect(sender.nonce == UInt64.max && receiver.nonce == UInt64.max)
        #expect(noiseCode { () throws(NoiseError) in try sender.encrypt([1]) } == .nonceExhausted)
        #expect(noiseCode { () throws(NoiseError) in try receiver.decrypt(sealed) } == .nonceExhausted)
        #expect(sender.nonce == UInt64.max)
    }

    @Test func errorsHaveTheSharedShape() {
        let error = NoiseError(.authenticationFailed, "a message did not authenticate")
        #expect(error.kind == .protocolViolation)
        #expect(error.code.rawValue == "noise-authentication-failed")
    }
}
