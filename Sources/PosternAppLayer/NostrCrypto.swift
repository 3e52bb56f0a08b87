import PosternCrypto
internal import CSecp256k1
internal import CSodium
import Foundation
import PosternTor

/// The secp256k1 context: one owner, destroyed in deinit. Randomized once against side channels.
final class Secp256k1Context: @unchecked Sendable {
    let pointer: OpaquePointer

    static let shared: Secp256k1Context = Secp256k1Context()

    private init() {
        pointer = secp256k1_context_create(UInt32(SECP256K1_CONTEXT_NONE))
        var seed = [UInt8](repeating: 0, count: 32)
        SecureRandom.fill(&seed)
        _ = secp256k1_context_randomize(pointer, seed)
    }

    deinit { secp256k1_context_destroy(pointer) }

    static func check(_ result: Int32, _ what: String) throws(AppLayerError) {
        guard result == 1 else { throw AppLayerError(.crypto, kind: .usage, "secp256k1: \(what) failed") }
    }
}

/// A Nostr identity: a secp256k1 secret key and its BIP-340 x-only public key.
public struct NostrKeyPair: Sendable, Hashable {
    /// The 32-byte secp256k1 secret key (never log it).
    public let secretKey: [UInt8]
    /// The 32-byte BIP-340 x-only public key.
    public let publicKey: [UInt8]

    /// The pair of a 32-byte secret key; throws `crypto` for a key that is not valid on the curve.
    public init(secretKey: [UInt8]) throws(AppLayerError) {
        guard secretKey.count == 32 else { throw AppLayerError(.crypto, kind: .usage, "a secret key is 32 bytes") }
        let context = Secp256k1Context.shared.pointer
        var keypair = secp256k1_keypair()
        try Secp256k1Context.check(secp256k1_keypair_create(context, &keypair, secretKey), "secret key out of range")
        var xonly = secp256k1_xonly_pubkey()
        try Secp256k1Context.check(secp256k1_keypair_xonly_pub(context, &xonly, nil, &keypair), "x-only public key")
        var serialized = [UInt8](repeating: 0, count: 32)
        try Secp256k1Context.check(secp256k1_xonly_pubkey_serialize(context, &serialized, &xonly), "serialize public key")
        self.secretKey = secretKey
        publicKey = serialized
    }

    /// The pair of a secret key given as 64 hex digits; throws `crypto` otherwise.
    public init(secretKeyHex: String) throws(AppLayerError) {
        guard let bytes = Hex.decode(secretKeyHex) else { throw AppLayerError(.crypto, kind: .usage, "secret key is not hex") }
        try self.init(secretKey: bytes)
    }

    /// A new pair from the system's secure randomness.
    public static func generate() -> NostrKeyPair {
        while true {
            var secret = [UInt8](repeating: 0, count: 32)
            SecureRandom.fill(&secret)
            if let pair = try? NostrKeyPair(secretKey: secret) { return pair }
        }
    }

    /// The public key as 64 lowercase hex digits (how Nostr writes `pubkey`).
    public var publicKeyHex: String { Hex.encode(publicKey) }

    /// BIP-340 signature of a 32-byte message; `auxiliaryRandomness` defaults to fresh random bytes.
    public func sign(_ message32: [UInt8], auxiliaryRandomness: [UInt8]? = nil) throws(AppLayerError) -> [UInt8] {
        guard message32.count == 32 else { throw AppLayerError(.crypto, kind: .usage, "BIP-340 signs 32-byte messages here") }
        var aux = auxiliaryRandomness ?? {
            var bytes = [UInt8](repeating: 0, count: 32)
            SecureRandom.fill(&bytes)
            return bytes
        }()
        guard aux.count == 32 else { throw AppLayerError(.crypto, kind: .usage, "aux randomness is 32 bytes") }
        let context = Secp256k1Context.shared.pointer
        var keypair = secp256k1_keypair()
        try Secp256k1Context.check(secp256k1_keypair_create(context, &keypair, secretKey), "keypair")
        var signature = [UInt8](repeating: 0, count: 64)
        try Secp256k1Context.check(secp256k1_schnorrsig_sign32(context, &signature, message32, &keypair, &aux), "schnorr sign")
        // Verify before release (libsecp256k1's advice against fault attacks).
        guard Self.verify(signature: signature, message: message32, publicKey: publicKey) else {
            throw AppLayerError(.crypto, "signature failed its own verification")
        }
        return signature
    }

    /// BIP-340 verification; false for any malformed input.
    public static func verify(signature: [UInt8], message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == 64, publicKey.count == 32 else { return false }
        let context = Secp256k1Context.shared.pointer
        var xonly = secp256k1_xonly_pubkey()
        guard secp256k1_xonly_pubkey_parse(context, &xonly, publicKey) == 1 else { return false }
        return secp256k1_schnorrsig_verify(context, signature, message, message.count, &xonly) == 1
    }
}


/// NIP-44 version 2: ECDH (unhashed x) → HKDF-extract with salt "nip44-v2" → per-message keys by
/// HKDF-expand(nonce) → padded plaintext, ChaCha20 (IETF, counter 0), HMAC-SHA256 over nonce ‖
/// ciphertext. Payload: base64(0x02 ‖ nonce(32) ‖ ciphertext ‖ mac(32)).
public enum NIP44 {
    /// The payload version this implements: 2.
    public static let version: UInt8 = 2

    /// The conversation key of our `secretKey` and the peer's x-only `publicKey` (32 bytes each):
    /// the same from either side. Throws `crypto` for a key off the curve.
    public static func conversationKey(secretKey: [UInt8], publicKey: [UInt8]) throws(AppLayerError) -> [UInt8] {
        guard secretKey.count == 32, publicKey.count == 32 else { throw AppLayerError(.crypto, kind: .usage, "keys are 32 bytes") }
        let context = Secp256k1Context.shared.pointer
        var point = secp256k1_pubkey()
        try Secp256k1Context.check(secp256k1_ec_pubkey_parse(context, &point, [0x02] + publicKey, 33), "public key is not on the curve")
        var shared = [UInt8](repeating: 0, count: 32)
        let copyX: secp256k1_ecdh_hash_function = { output, x32, _, _ in
            guard let output, let x32 else { return 0 }
            output.update(from: x32, count: 32)
            return 1
        }
        try Secp256k1Context.check(secp256k1_ecdh(context, &shared, &point, secretKey, copyX, nil), "ECDH (secret key out of range?)")
        return Digest.hkdfExtract(salt: Array("nip44-v2".utf8), inputKeyMaterial: shared)
    }

    struct MessageKeys: Equatable {
        let chachaKey: [UInt8], chachaNonce: [UInt8], hmacKey: [UInt8]
    }

    static func messageKeys(conversationKey: [UInt8], nonce: [UInt8]) throws(AppLayerError) -> MessageKeys {
        guard conversationKey.count == 32 else { throw AppLayerError(.crypto, kind: .usage, "conversation key is 32 bytes") }
        guard nonce.count == 32 else { throw AppLayerError(.crypto, kind: .usage, "nonce is 32 bytes") }
        let keys = Digest.hkdfExpand(pseudoRandomKey: conversationKey, info: nonce, length: 76)
        return MessageKeys(chachaKey: Array(keys[0..<32]), chachaNonce: Array(keys[32..<44]), hmacKey: Array(keys[44..<76]))
    }

    static func paddedLength(_ length: Int) -> Int {
        guard length > 32 else { return 32 }
        // 1 << (floor(log2(length - 1)) + 1)
        let nextPower = 1 << (Int.bitWidth - (length - 1).leadingZeroBitCount)
        let chunk = nextPower <= 256 ? 32 : nextPower / 8
        return chunk * ((length - 1) / chunk + 1)
    }

    /// `plaintext` (1 to 65535 bytes of UTF-8) as a base64 payload; `nonce` only for test vectors
    /// (a fresh random one otherwise).
    public static func encrypt(_ plaintext: String, conversationKey: [UInt8], nonce: [UInt8]? = nil) throws(AppLayerError) -> String {
        let nonce = nonce ?? {
            var bytes = [UInt8](repeating: 0, count: 32)
            SecureRandom.fill(&bytes)
            return bytes
        }()
        let message = Array(plaintext.utf8)
        guard (1...65535).contains(message.count) else {
            throw AppLayerError(.crypto, kind: .usage, "NIP-44 plaintext must be 1...65535 bytes, got \(message.count)")
        }
        let keys = try messageKeys(conversationKey: conversationKey, nonce: nonce)
        var padded = [UInt8(message.count >> 8), UInt8(message.count & 0xFF)] + message
        padded += [UInt8](repeating: 0, count: paddedLength(message.count) - message.count)
        var ciphertext = [UInt8](repeating: 0, count: padded.count)
        crypto_stream_chacha20_ietf_xor(&ciphertext, padded, UInt64(padded.count), keys.chachaNonce, keys.chachaKey)
        let mac = Digest.hmacSHA256(key: keys.hmacKey, nonce, ciphertext)
        return Data([version] + nonce + ciphertext + mac).base64EncodedString()
    }

    /// The plaintext of a base64 payload; throws `crypto` for a wrong version, MAC, padding or length.
    public static func decrypt(_ payload: String, conversationKey: [UInt8]) throws(AppLayerError) -> String {
        func invalid(_ reason: String) -> AppLayerError { AppLayerError(.crypto, "NIP-44 payload rejected: \(reason)") }
        guard !payload.isEmpty, !payload.hasPrefix("#") else { throw invalid("unknown encryption version") }
        guard (132...87472).contains(payload.utf8.count) else { throw invalid("invalid payload size \(payload.utf8.count)") }
        guard let decoded = Data(base64Encoded: payload).map(Array.init) else { throw invalid("not base64") }
        guard (99...65603).contains(decoded.count) else { throw invalid("invalid data size \(decoded.count)") }
        guard decoded[0] == version else { throw invalid("unknown encryption version \(decoded[0])") }
        let nonce = Array(decoded[1..<33])
        let ciphertext = Array(decoded[33..<(decoded.count - 32)])
        let mac = Array(decoded[(decoded.count - 32)...])
        let keys = try messageKeys(conversationKey: conversationKey, nonce: nonce)
        let expected = Digest.hmacSHA256(key: keys.hmacKey, nonce, ciphertext)
        guard sodium_memcmp(expected, mac, 32) == 0 else { throw invalid("invalid MAC") }
        var padded = [UInt8](repeating: 0, count: ciphertext.count)
        crypto_stream_chacha20_ietf_xor(&padded, ciphertext, UInt64(ciphertext.count), keys.chachaNonce, keys.chachaKey)
        guard padded.count >= 2 else { throw invalid("invalid padding") }
        let length = Int(padded[0]) << 8 | Int(padded[1])
        guard length >= 1, padded.count == 2 + paddedLength(length), 2 + length <= padded.count else {
            throw invalid("invalid padding")
        }
        guard let text = String(validating: padded[2..<(2 + length)], as: UTF8.self) else { throw invalid("plaintext is not UTF-8") }
        return text
    }
}
