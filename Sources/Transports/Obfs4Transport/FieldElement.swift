/// An element of GF(2^255 − 19) in five 51-bit limbs (radix 2^51), for the Elligator2 maps.
///
/// Every operation is straight-line code with no branches or table lookups on the value, so the
/// secret-dependent Elligator2 inverse map runs in constant time. Limbs stay below 2^52 between
/// operations; products are accumulated in UInt128.
struct FieldElement: Sendable, Equatable {
    var limbs: (UInt64, UInt64, UInt64, UInt64, UInt64)

    private static let mask51: UInt64 = (1 << 51) - 1

    init(_ l0: UInt64, _ l1: UInt64, _ l2: UInt64, _ l3: UInt64, _ l4: UInt64) {
        limbs = (l0, l1, l2, l3, l4)
    }

    init(_ small: UInt64) {
        self.init(small & Self.mask51, small >> 51, 0, 0, 0)
    }

    /// Reads 32 little-endian bytes; bit 255 is ignored (as RFC 7748 prescribes).
    init(bytes: some Collection<UInt8>) {
        precondition(bytes.count == 32)
        var words: [UInt64] = [0, 0, 0, 0]
        for (index, byte) in bytes.enumerated() { words[index / 8] |= UInt64(byte) << (UInt64(index % 8) * 8) }
        let m = Self.mask51
        self.init(words[0] & m,
                  ((words[0] >> 51) | (words[1] << 13)) & m,
                  ((words[1] >> 38) | (words[2] << 26)) & m,
                  ((words[2] >> 25) | (words[3] << 39)) & m,
                  (words[3] >> 12) & m)
    }

    static let zero = FieldElement(0)
    static let one = FieldElement(1)
    /// Curve25519's A.
    static let montgomeryA = FieldElement(486_662)
    /// sqrt(−1) = 2^((p−1)/4).
    static let sqrtMinusOne = FieldElement(bytes: hexBytes("b0a00e4a271beec478e42fad0618432fa7d7fb3d99004d2b0bdfc14f8024832b"))

    /// Carries so that each limb is below 2^51 (plus a small excess in limb 0).
    private static func carried(_ c0: UInt64, _ c1: UInt64, _ c2: UInt64, _ c3: UInt64, _ c4: UInt64) -> FieldElement {
        let m = mask51
        var l0 = c0, l1 = c1, l2 = c2, l3 = c3, l4 = c4
        l1 &+= l0 >> 51; l0 &= m
        l2 &+= l1 >> 51; l1 &= m
        l3 &+= l2 >> 51; l2 &= m
        l4 &+= l3 >> 51; l3 &= m
        l0 &+= (l4 >> 51) &* 19; l4 &= m
        l1 &+= l0 >> 51; l0 &= m
        return FieldElement(l0, l1, l2, l3, l4)
    }

    static func + (a: FieldElement, b: FieldElement) -> FieldElement {
        carried(a.limbs.0 &+ b.limbs.0, a.limbs.1 &+ b.limbs.1, a.limbs.2 &+ b.limbs.2,
                a.limbs.3 &+ b.limbs.3, a.limbs.4 &+ b.limbs.4)
    }

    /// a − b computed as a + 16p − b so no limb underflows.
    static func - (a: FieldElement, b: FieldElement) -> FieldElement {
        carried((a.limbs.0 &+ 36_028_797_018_963_664) &- b.limbs.0,
                (a.limbs.1 &+ 36_028_797_018_963_952) &- b.limbs.1,
                (a.limbs.2 &+ 36_028_797_018_963_952) &- b.limbs.2,
                (a.limbs.3 &+ 36_028_797_018_963_952) &- b.limbs.3,
                (a.limbs.4 &+ 36_028_797_018_963_952) &- b.limbs.4)
    }

    static prefix func - (a: FieldElement) -> FieldElement { zero - a }

    static func * (a: FieldElement, b: FieldElement) -> FieldElement {
        @inline(__always) func m(_ x: UInt64, _ y: UInt64) -> UInt128 { UInt128(x) &* UInt128(y) }
        let (a0, a1, a2, a3, a4) = a.limbs
        let (b0, b1, b2, b3, b4) = b.limbs
        let b1x19 = b1 &* 19, b2x19 = b2 &* 19, b3x19 = b3 &* 19, b4x19 = b4 &* 19
        let c0 = m(a0, b0) &+ m(a4, b1x19) &+ m(a3, b2x19) &+ m(a2, b3x19) &+ m(a1, b4x19)
        var c1 = m(a1, b0) &+ m(a0, b1) &+ m(a4, b2x19) &+ m(a3, b3x19) &+ m(a2, b4x19)
        var c2 = m(a2, b0) &+ m(a1, b1) &+ m(a0, b2) &+ m(a4, b3x19) &+ m(a3, b4x19)
        var c3 = m(a3, b0) &+ m(a2, b1) &+ m(a1, b2) &+ m(a0, b3) &+ m(a4, b4x19)
        var c4 = m(a4, b0) &+ m(a3, b1) &+ m(a2, b2) &+ m(a1, b3) &+ m(a0, b4)
        let mask = UInt128(mask51)
        c1 &+= c0 >> 51
        let r0 = UInt64(truncatingIfNeeded: c0 & mask)
        c2 &+= c1 >> 51
        let r1 = UInt64(truncatingIfNeeded: c1 & mask)
        c3 &+= c2 >> 51
        let r2 = UInt64(truncatingIfNeeded: c2 & mask)
        c4 &+= c3 >> 51
        let r3 = UInt64(truncatingIfNeeded: c3 & mask)
        let carry = UInt64(truncatingIfNeeded: c4 >> 51)
        let r4 = UInt64(truncatingIfNeeded: c4 & mask)
        return carried(r0 &+ carry &* 19, r1, r2, r3, r4)
    }

    func squared() -> FieldElement { self * self }

    /// self^(2^k).
    func squared(times k: Int) -> FieldElement {
        var result = self
        for _ in 0..<k { result = result * result }
        return result
    }

    /// Returns (self^(2^250 − 1), self^11), the shared prefix of the exponentiation chains.
    private func pow22501() -> (FieldElement, FieldElement) {
        let t0 = squared()                       // 2
        let t1 = t0.squared(times: 2)            // 8
        let t2 = self * t1                       // 9
        let t3 = t0 * t2                         // 11
        let t4 = t3.squared()                    // 22
        let t5 = t2 * t4                         // 2^5 − 1
        let t7 = t5.squared(times: 5) * t5       // 2^10 − 1
        let t9 = t7.squared(times: 10) * t7      // 2^20 − 1
        let t11 = t9.squared(times: 20) * t9     // 2^40 − 1
        let t13 = t11.squared(times: 10) * t7    // 2^50 − 1
        let t15 = t13.squared(times: 50) * t13   // 2^100 − 1
        let t17 = t15.squared(times: 100) * t15  // 2^200 − 1
        let t19 = t17.squared(times: 50) * t13   // 2^250 − 1
        return (t19, t3)
    }

    /// self^(p − 2): the inverse (0 maps to 0).
    func inverted() -> FieldElement {
        let (t19, t3) = pow22501()
        return t19.squared(times: 5) * t3
    }

    /// self^((p − 5) / 8) = self^(2^252 − 3).
    func powP58() -> FieldElement {
        let (t19, _) = pow22501()
        return t19.squared(times: 2) * self
    }

    /// Legendre symbol as a field element: 1 (non-zero square), −1 (non-square) or 0.
    func legendre() -> FieldElement {
        // (p − 1)/2 = 4·(p − 5)/8 + 2
        powP58().squared(times: 2) * squared()
    }

    /// True when the value is a square (zero included). Constant time.
    var isSquare: Bool { !(legendre() == -FieldElement.one) }

    /// A square root for a value known to be a square; the caller picks the sign.
    func squareRoot() -> FieldElement {
        let candidate = self * powP58()                         // self^((p + 3)/8)
        let other = candidate * FieldElement.sqrtMinusOne
        let candidateWorks = candidate.squared() == self
        return FieldElement.select(candidate, other, chooseFirst: candidateWorks)
    }

    /// Constant-time choice between two elements.
    static func select(_ a: FieldElement, _ b: FieldElement, chooseFirst: Bool) -> FieldElement {
        let maskA = 0 &- UInt64(chooseFirst ? 1 : 0)
        let maskB = ~maskA
        return FieldElement((a.limbs.0 & maskA) | (b.limbs.0 & maskB), (a.limbs.1 & maskA) | (b.limbs.1 & maskB),
                            (a.limbs.2 & maskA) | (b.limbs.2 & maskB), (a.limbs.3 & maskA) | (b.limbs.3 & maskB),
                            (a.limbs.4 & maskA) | (b.limbs.4 & maskB))
    }

    /// The unique representative below p, as 32 little-endian bytes.
    var canonicalBytes: [UInt8] {
        let m = Self.mask51
        let reduced = Self.carried(limbs.0, limbs.1, limbs.2, limbs.3, limbs.4)
        var (l0, l1, l2, l3, l4) = reduced.limbs
        // q = 1 exactly when the value is ≥ p.
        var q = (l0 &+ 19) >> 51
        q = (l1 &+ q) >> 51
        q = (l2 &+ q) >> 51
        q = (l3 &+ q) >> 51
        q = (l4 &+ q) >> 51
        l0 &+= 19 &* q
        l1 &+= l0 >> 51; l0 &= m
        l2 &+= l1 >> 51; l1 &= m
        l3 &+= l2 >> 51; l2 &= m
        l4 &+= l3 >> 51; l3 &= m
        l4 &= m
        let words: [UInt64] = [l0 | (l1 << 51), (l1 >> 13) | (l2 << 38), (l2 >> 26) | (l3 << 25), (l3 >> 39) | (l4 << 12)]
        var bytes = [UInt8](repeating: 0, count: 32)
        for index in 0..<32 { bytes[index] = UInt8(truncatingIfNeeded: words[index / 8] >> (UInt64(index % 8) * 8)) }
        return bytes
    }

    /// True when the canonical value is odd ("negative" in the RFC 8032 sense).
    var isOdd: Bool { canonicalBytes[0] & 1 == 1 }

    var isZero: Bool { Sodium.constantTimeEqual(canonicalBytes, [UInt8](repeating: 0, count: 32)) }

    static func == (a: FieldElement, b: FieldElement) -> Bool {
        Sodium.constantTimeEqual(a.canonicalBytes, b.canonicalBytes)
    }
}

/// Decodes a hex string known at compile time (constants and tests).
func hexBytes(_ hex: String) -> [UInt8] {
    let digits = Array(hex.utf8).filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\n") }
    precondition(digits.count % 2 == 0, "odd-length hex")
    func nibble(_ c: UInt8) -> UInt8 {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: preconditionFailure("not a hex digit")
        }
    }
    return stride(from: 0, to: digits.count, by: 2).map { nibble(digits[$0]) << 4 | nibble(digits[$0 + 1]) }
}
