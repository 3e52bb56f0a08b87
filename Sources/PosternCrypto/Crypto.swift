internal import CSodium

// The one place for digests, MACs and randomness. SHA-256, SHA-512, HMAC-SHA256 and random bytes
// come from libsodium, initialised once per process before its first use (LibSodium); SHA-1, which
// libsodium lacks, is here in Swift for the one use RFC 6455 makes of it.

/// libsodium's process-wide initialisation, done once. Modules that call libsodium themselves (the
/// obfs4 primitives, NIP-44's ChaCha20) check `isReady` first.
public enum LibSodium {
    /// `sodium_init` is thread-safe and idempotent; this static runs it exactly once.
    private static let initialised: Bool = sodium_init() >= 0

    /// Whether libsodium initialised (false only if the machine has no entropy source at all).
    public static var isReady: Bool { initialised }

    static func require() {
        precondition(initialised, "libsodium failed to initialise")
    }
}

/// Message digests and HMAC, and HKDF (RFC 5869) on top.
public enum Digest {
    /// SHA-1 (FIPS 180-4). Only for Sec-WebSocket-Accept (RFC 6455 §4.2.2), where it is not a
    /// security primitive; never use it for anything that must resist an attacker.
    public static func sha1(_ message: some Collection<UInt8>) -> [UInt8] {
        var h: [UInt32] = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0]
        var data = Array(message)
        let bitLength = UInt64(data.count) * 8
        data.append(0x80)
        while data.count % 64 != 56 { data.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { data.append(UInt8((bitLength >> UInt64(shift)) & 0xff)) }
        var w = [UInt32](repeating: 0, count: 80)
        for chunk in stride(from: 0, to: data.count, by: 64) {
            for i in 0..<16 {
                w[i] = UInt32(data[chunk + 4 * i]) << 24 | UInt32(data[chunk + 4 * i + 1]) << 16
                    | UInt32(data[chunk + 4 * i + 2]) << 8 | UInt32(data[chunk + 4 * i + 3])
            }
            for i in 16..<80 {
                let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]
                w[i] = x << 1 | x >> 31
            }
            var (a, b, c, d, e) = (h[0], h[1], h[2], h[3], h[4])
            for i in 0..<80 {
                let (f, k): (UInt32, UInt32) = switch i {
                case 0..<20: ((b & c) | (~b & d), 0x5A827999)
                case 20..<40: (b ^ c ^ d, 0x6ED9EBA1)
                case 40..<60: ((b & c) | (b & d) | (c & d), 0x8F1BBCDC)
                default: (b ^ c ^ d, 0xCA62C1D6)
                }
                let temp = (a << 5 | a >> 27) &+ f &+ e &+ k &+ w[i]
                (e, d, c, b, a) = (d, c, b << 30 | b >> 2, a, temp)
            }
            h[0] &+= a; h[1] &+= b; h[2] &+= c; h[3] &+= d; h[4] &+= e
        }
        return h.flatMap { v in [UInt8(v >> 24), UInt8((v >> 16) & 0xff), UInt8((v >> 8) & 0xff), UInt8(v & 0xff)] }
    }

    public static func sha256(_ message: some Collection<UInt8>) -> [UInt8] {
        sodiumDigest(Array(message), length: 32) { crypto_hash_sha256($0, $1, $2) }
    }

    public static func sha512(_ message: some Collection<UInt8>) -> [UInt8] {
        sodiumDigest(Array(message), length: 64) { crypto_hash_sha512($0, $1, $2) }
    }

    private static func sodiumDigest(_ bytes: [UInt8], length: Int,
                                     _ hash: (UnsafeMutablePointer<UInt8>, UnsafePointer<UInt8>, UInt64) -> Int32) -> [UInt8] {
        LibSodium.require()
        var digest = [UInt8](repeating: 0, count: length)
        _ = hash(&digest, bytes, UInt64(bytes.count))
        return digest
    }

    /// HMAC-SHA256 over the concatenation of `parts`, with a key of any length.
    public static func hmacSHA256(key: [UInt8], _ parts: [UInt8]...) -> [UInt8] {
        hmacSHA256(key: key, parts: parts)
    }

    public static func hmacSHA256(key: [UInt8], parts: [[UInt8]]) -> [UInt8] {
        LibSodium.require()
        var state = crypto_auth_hmacsha256_state()
        crypto_auth_hmacsha256_init(&state, key, key.count)
        for part in parts { crypto_auth_hmacsha256_update(&state, part, UInt64(part.count)) }
        var mac = [UInt8](repeating: 0, count: 32)
        crypto_auth_hmacsha256_final(&state, &mac)
        // The state holds the keyed pads.
        sodium_memzero(&state, MemoryLayout<crypto_auth_hmacsha256_state>.size)
        return mac
    }

    /// HKDF-Extract with HMAC-SHA256.
    public static func hkdfExtract(salt: [UInt8], inputKeyMaterial: [UInt8]) -> [UInt8] {
        hmacSHA256(key: salt, inputKeyMaterial)
    }

    /// HKDF-Expand with HMAC-SHA256 (`length` ≤ 255 × 32).
    public static func hkdfExpand(pseudoRandomKey: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        precondition(length <= 255 * 32, "HKDF-SHA256 output is at most 8160 bytes")
        var output: [UInt8] = []
        var previous: [UInt8] = []
        var counter: UInt8 = 1
        while output.count < length {
            previous = hmacSHA256(key: pseudoRandomKey, previous, info, [counter])
            output += previous
            counter &+= 1
        }
        return Array(output.prefix(length))
    }

    /// HKDF-SHA256: Extract, then Expand.
    public static func hkdfSHA256(inputKeyMaterial: [UInt8], salt: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        hkdfExpand(pseudoRandomKey: hkdfExtract(salt: salt, inputKeyMaterial: inputKeyMaterial), info: info, length: length)
    }
}

/// Randomness from libsodium's CSPRNG (getrandom(2) underneath).
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        fill(&bytes)
        return bytes
    }

    public static func fill(_ bytes: inout [UInt8]) {
        LibSodium.require()
        bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { randombytes_buf(base, $0.count) } }
    }

    /// Uniform in `0..<upperBound`, without modulo bias.
    public static func uniform(_ upperBound: UInt32) -> UInt32 {
        LibSodium.require()
        return randombytes_uniform(upperBound)
    }
}
