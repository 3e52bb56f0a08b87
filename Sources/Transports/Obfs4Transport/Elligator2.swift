import PosternCrypto
import TransportBase

/// Elligator2 over Curve25519 as obfs4 uses it (spec §3): representatives are 32 bytes whose top
/// two bits are random padding, and client keys are "dirty" (a low-order component is added) so that
/// decoded representatives are not all in the prime-order subgroup.
package enum Elligator2 {
    /// Representative → Montgomery u (spec §3.2 "Decode"). Clears both top bits, as obfs4proxy ≥
    /// 0.0.12 and lyrebird do.
    /// `clearingBit254: false` reproduces obfs4proxy ≤ 0.0.11, which cleared only bit 255 (tests use
    /// it to model such a bridge).
    package static func decode(representative: [UInt8], clearingBit254: Bool = true) -> [UInt8] {
        precondition(representative.count == 32)
        var masked = representative
        masked[31] &= clearingBit254 ? 0x3F : 0x7F
        let r = FieldElement(bytes: masked)
        let a = FieldElement.montgomeryA
        let denominator = FieldElement.one + (r.squared() + r.squared())   // 1 + 2r², never 0
        let w = -(a * denominator.inverted())
        let curve = w * (w.squared() + a * w + .one)                        // w³ + A·w² + w
        let u = FieldElement.select(w, -(a + w), chooseFirst: curve.isSquare)
        return u.canonicalBytes
    }

    /// Montgomery u + tweak → representative, or nil when u has none (about half of all points).
    ///
    /// Bit 0 of the tweak picks which root formula is used (it stands in for v's sign); bits 6 and 7
    /// become the representative's top two bits. The arithmetic is constant time; only the final
    /// "has a representative" answer is visible, and keys are generated before connecting.
    static func representative(u uBytes: [UInt8], tweak: UInt8) -> [UInt8]? {
        precondition(uBytes.count == 32)
        let u = FieldElement(bytes: uBytes)
        let a = FieldElement.montgomeryA
        let uPlusA = u + a
        let two = FieldElement(2)
        let discriminant = -(two * u * uPlusA)
        let usable = !u.isZero && !uPlusA.isZero && discriminant.isSquare
        let useSecondFormula = tweak & 1 == 1
        let numerator = FieldElement.select(-uPlusA, -u, chooseFirst: useSecondFormula)
        let denominator = FieldElement.select(two * u, two * uPlusA, chooseFirst: useSecondFormula)
        var r = (numerator * denominator.inverted()).squareRoot()
        // Keep the root ≤ (p−1)/2, i.e. the one for which 2r mod p is even.
        r = FieldElement.select(-r, r, chooseFirst: (r + r).isOdd)
        guard usable else { return nil }
        var bytes = r.canonicalBytes
        bytes[31] |= tweak & 0xC0
        return bytes
    }
}

/// An ephemeral X25519 key with an Elligator2 representative (spec §3.1).
package struct RepresentableKeyPair: Sendable {
    /// The unclamped 32-byte secret (X25519 clamps it when used).
    package let secretKey: [UInt8]
    /// The dirty u-coordinate; equals `Elligator2.decode(representative)`.
    package let publicKey: [UInt8]
    /// What goes on the wire.
    package let representative: [UInt8]

    /// The order-8 Edwards point T8 (compressed; x is even) from lyrebird's constants.
    private static let torsionPointT8 = hexBytes("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05")

    /// k·T8 for k = 0…7, compressed.
    private static let torsionMultiples: [[UInt8]] = {
        var points: [[UInt8]] = [[1] + [UInt8](repeating: 0, count: 31)]
        for _ in 1..<8 { points.append(try! Sodium.ed25519Add(points[points.count - 1], torsionPointT8)) }
        return points
    }()

    /// Derives a key pair from 32 random bytes the way lyrebird does; nil if the resulting point has
    /// no representative. `clearTweakBit254` forces the representative's bit 254 to 0 (the retry for
    /// obfs4proxy ≤ 0.0.11 bridges, spec §3.4).
    package static func derive(fromSeed seed: [UInt8], clearTweakBit254: Bool = false) throws(TransportError) -> RepresentableKeyPair? {
        precondition(seed.count == 32)
        let digest = Digest.sha512(seed)
        let secretKey = Array(digest[0..<32])
        var tweak = digest[63]
        // Bit 254 of the representative is bit 6 of its last byte (0x40). The spec's "tweak &= 0x7F"
        // would clear bit 255 instead, which old bridges already ignore.
        if clearTweakBit254 { tweak &= 0xBF }
        let publicKey = try dirtyPublicKey(secretKey: secretKey)
        guard let representative = Elligator2.representative(u: publicKey, tweak: tweak) else { return nil }
        return RepresentableKeyPair(secretKey: secretKey, publicKey: publicKey, representative: representative)
    }

    /// Draws seeds until one yields a representative (about two tries on average).
    static func generate(clearTweakBit254: Bool = false) throws(TransportError) -> RepresentableKeyPair {
        try Sodium.ensureInitialised()
        while true {
            if let pair = try derive(fromSeed: SecureRandom.bytes(32), clearTweakBit254: clearTweakBit254) { return pair }
        }
    }

    /// u of clamp(sk)·G + (sk[0] & 7)·T8 (spec §3.3); the low-order part comes from the UNCLAMPED secret.
    static func dirtyPublicKey(secretKey: [UInt8]) throws(TransportError) -> [UInt8] {
        var clamped = secretKey
        clamped[0] &= 248
        clamped[31] &= 127
        clamped[31] |= 64
        let primeOrderPart = try Sodium.ed25519BaseNoClamp(scalar: clamped)
        // Constant-time selection of k·T8 among the eight multiples.
        let k = secretKey[0] & 7
        var torsion = [UInt8](repeating: 0, count: 32)
        for (index, point) in torsionMultiples.enumerated() {
            let difference = UInt8(index) ^ k
            let mask = UInt8(truncatingIfNeeded: (Int(difference) - 1) >> 8)   // 0xFF when equal
            for byte in 0..<32 { torsion[byte] |= point[byte] & mask }
        }
        let point = try Sodium.ed25519Add(primeOrderPart, torsion)
        // Birational map to Montgomery: u = (1 + y) / (1 − y).
        var yBytes = point
        yBytes[31] &= 0x7F
        let y = FieldElement(bytes: yBytes)
        return ((FieldElement.one + y) * (FieldElement.one - y).inverted()).canonicalBytes
    }
}
