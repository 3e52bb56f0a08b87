// BLAKE2s (RFC 7693) in Swift, because libsodium has only BLAKE2b and the Noise suite dnstt speaks
// (Noise_NK_25519_ChaChaPoly_BLAKE2s) needs BLAKE2s; keeping it here leaves libsodium PosternCrypto's
// only C dependency. Speed hardly matters: Noise hashes only during the handshake.

/// BLAKE2s (RFC 7693), HMAC over it (RFC 2104, 64-byte block) and HKDF as the Noise Protocol
/// Framework (revision 34, §4.3) defines it.
public enum BLAKE2s {
    /// The digest length Noise uses (HASHLEN).
    public static let hashLength = 32
    /// The compression function's block (BLOCKLEN), which is also HMAC's.
    public static let blockLength = 64

    /// RFC 7693 §2.6: the initialisation vector (SHA-256's).
    private static let iv: [UInt32] = [
        0x6A09_E667, 0xBB67_AE85, 0x3C6E_F372, 0xA54F_F53A,
        0x510E_527F, 0x9B05_688C, 0x1F83_D9AB, 0x5BE0_CD19,
    ]

    /// RFC 7693 §2.7: the message word schedule of each of the ten rounds.
    private static let sigma: [[Int]] = [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
        [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
        [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
        [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
        [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
        [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
        [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
        [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
        [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
    ]

    /// BLAKE2s-256 of the concatenation of `parts` (unkeyed, 32 bytes).
    public static func hash(_ parts: [UInt8]...) -> [UInt8] {
        hash(parts: parts)
    }

    /// BLAKE2s-256 of the concatenation of `parts` (unkeyed, 32 bytes).
    public static func hash(parts: [[UInt8]]) -> [UInt8] {
        hash(parts.count == 1 ? parts[0] : parts.flatMap { $0 }, key: [], outputLength: hashLength)
    }

    /// BLAKE2s with a key of 0 to 32 bytes and a digest of 1 to 32 bytes (RFC 7693 §3.3). The
    /// lengths are the caller's choice, never a peer's, so a length out of range is a programming
    /// error and traps.
    public static func hash(_ message: [UInt8], key: [UInt8], outputLength: Int) -> [UInt8] {
        precondition((1...32).contains(outputLength), "BLAKE2s digests are 1 to 32 bytes")
        precondition(key.count <= 32, "BLAKE2s keys are at most 32 bytes")
        var h = iv
        // Parameter block (RFC 7693 §2.5): digest length, key length, fanout 1, depth 1.
        h[0] ^= 0x0101_0000 ^ UInt32(key.count) << 8 ^ UInt32(outputLength)
        // A key is hashed as a first block of its own, zero-padded (§3.3).
        var input = key
        if !key.isEmpty { input += [UInt8](repeating: 0, count: blockLength - key.count) }
        input += message
        var counter: UInt64 = 0
        var offset = 0
        // Every block but the last is compressed as it comes; the last (possibly short, possibly
        // empty when the whole input is empty) is padded with zeros and flagged final.
        while input.count - offset > blockLength {
            counter &+= UInt64(blockLength)
            compress(&h, input, offset: offset, length: blockLength, counter: counter, final: false)
            offset += blockLength
        }
        counter &+= UInt64(input.count - offset)
        compress(&h, input, offset: offset, length: input.count - offset, counter: counter, final: true)
        var digest = [UInt8]()
        digest.reserveCapacity(32)
        for word in h {
            digest += [UInt8(truncatingIfNeeded: word), UInt8(truncatingIfNeeded: word >> 8),
                       UInt8(truncatingIfNeeded: word >> 16), UInt8(truncatingIfNeeded: word >> 24)]
        }
        return Array(digest.prefix(outputLength))
    }

    /// RFC 7693 §3.2: F, on the `length` bytes of `input` at `offset` (zero-padded to a block).
    private static func compress(_ h: inout [UInt32], _ input: [UInt8], offset: Int, length: Int,
                                 counter: UInt64, final: Bool) {
        var m = [UInt32](repeating: 0, count: 16)
        for i in 0..<length {
            m[i / 4] |= UInt32(input[offset + i]) << (8 * UInt32(i % 4))
        }
        var v = h + iv
        v[12] ^= UInt32(truncatingIfNeeded: counter)
        v[13] ^= UInt32(truncatingIfNeeded: counter >> 32)
        if final { v[14] = ~v[14] }
        for round in 0..<10 {
            let s = sigma[round]
            mix(&v, 0, 4, 8, 12, m[s[0]], m[s[1]])
            mix(&v, 1, 5, 9, 13, m[s[2]], m[s[3]])
            mix(&v, 2, 6, 10, 14, m[s[4]], m[s[5]])
            mix(&v, 3, 7, 11, 15, m[s[6]], m[s[7]])
            mix(&v, 0, 5, 10, 15, m[s[8]], m[s[9]])
            mix(&v, 1, 6, 11, 12, m[s[10]], m[s[11]])
            mix(&v, 2, 7, 8, 13, m[s[12]], m[s[13]])
            mix(&v, 3, 4, 9, 14, m[s[14]], m[s[15]])
        }
        for i in 0..<8 { h[i] ^= v[i] ^ v[i + 8] }
    }

    /// RFC 7693 §3.1: G, with BLAKE2s's rotations 16, 12, 8 and 7.
    @inline(__always)
    private static func mix(_ v: inout [UInt32], _ a: Int, _ b: Int, _ c: Int, _ d: Int, _ x: UInt32, _ y: UInt32) {
        v[a] = v[a] &+ v[b] &+ x
        v[d] = rotateRight(v[d] ^ v[a], 16)
        v[c] = v[c] &+ v[d]
        v[b] = rotateRight(v[b] ^ v[c], 12)
        v[a] = v[a] &+ v[b] &+ y
        v[d] = rotateRight(v[d] ^ v[a], 8)
        v[c] = v[c] &+ v[d]
        v[b] = rotateRight(v[b] ^ v[c], 7)
    }

    @inline(__always)
    private static func rotateRight(_ x: UInt32, _ n: UInt32) -> UInt32 {
        x >> n | x << (32 - n)
    }

    /// HMAC-BLAKE2s (RFC 2104 with BLAKE2s-256 and its 64-byte block) over the concatenation of
    /// `parts`, with a key of any length, as Noise's HMAC-HASH.
    public static func hmac(key: [UInt8], _ parts: [UInt8]...) -> [UInt8] {
        hmac(key: key, parts: parts)
    }

    /// HMAC-BLAKE2s over the concatenation of `parts`.
    public static func hmac(key: [UInt8], parts: [[UInt8]]) -> [UInt8] {
        var block = key.count > blockLength ? hash(key) : key
        block += [UInt8](repeating: 0, count: blockLength - block.count)
        let inner = hash(parts: [block.map { $0 ^ 0x36 }] + parts)
        return hash(block.map { $0 ^ 0x5C }, inner)
    }

    /// Noise's HKDF (revision 34 §4.3): `outputCount` (2 or 3) outputs of 32 bytes from a chaining
    /// key and input key material, each output chained into the next. Noise always asks for 2 or 3.
    public static func hkdf(chainingKey: [UInt8], inputKeyMaterial: [UInt8], outputCount: Int) -> [[UInt8]] {
        precondition(outputCount == 2 || outputCount == 3, "Noise's HKDF makes 2 or 3 outputs")
        let tempKey = hmac(key: chainingKey, inputKeyMaterial)
        var outputs: [[UInt8]] = []
        var previous: [UInt8] = []
        for index in 1...outputCount {
            previous = hmac(key: tempKey, previous, [UInt8(index)])
            outputs.append(previous)
        }
        return outputs
    }
}
