/// obfs4's length-mask generator (spec §8.2): SipHash-2-4 in "OFB" mode over the whole history.
///
/// Block n is SipHash-2-4(K, IV | block1 | … | block(n−1)), because the reference code keeps
/// writing into one streaming hash and reads `Sum()` without resetting. Each appended block is
/// exactly one 8-byte SipHash word, so we absorb it into a running state and finalise a copy; the
/// cost per block is constant even though the message keeps growing.
struct SipHashDRBG: Sendable {
    private var v0: UInt64
    private var v1: UInt64
    private var v2: UInt64
    private var v3: UInt64
    private var absorbedLength: UInt64 = 0
    /// The previous block (the IV at first), as the little-endian word the next step absorbs.
    private var state: UInt64

    /// `seed` is 24 bytes: the 16-byte SipHash key followed by the 8-byte IV.
    init(seed: some Collection<UInt8>) {
        precondition(seed.count == 24)
        let bytes = Array(seed)
        func word(_ offset: Int) -> UInt64 {
            var value: UInt64 = 0
            for index in 0..<8 { value |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
            return value
        }
        let k0 = word(0), k1 = word(8)
        v0 = k0 ^ 0x736f_6d65_7073_6575
        v1 = k1 ^ 0x646f_7261_6e64_6f6d
        v2 = k0 ^ 0x6c79_6765_6e65_7261
        v3 = k1 ^ 0x7465_6462_7974_6573
        state = word(16)
    }

    @inline(__always)
    private static func round(_ v0: inout UInt64, _ v1: inout UInt64, _ v2: inout UInt64, _ v3: inout UInt64) {
        v0 &+= v1; v1 = v1.rotatedLeft(13); v1 ^= v0; v0 = v0.rotatedLeft(32)
        v2 &+= v3; v3 = v3.rotatedLeft(16); v3 ^= v2
        v0 &+= v3; v3 = v3.rotatedLeft(21); v3 ^= v0
        v2 &+= v1; v1 = v1.rotatedLeft(17); v1 ^= v2; v2 = v2.rotatedLeft(32)
    }

    /// The next 64-bit block, as SipHash returns it (its wire form is the little-endian bytes).
    mutating func nextBlock() -> UInt64 {
        let message = state
        v3 ^= message
        Self.round(&v0, &v1, &v2, &v3)
        Self.round(&v0, &v1, &v2, &v3)
        v0 ^= message
        absorbedLength &+= 8
        // Finalise a copy: the running state continues unfinalised.
        var f0 = v0, f1 = v1, f2 = v2, f3 = v3
        let lengthWord = (absorbedLength & 0xFF) << 56
        f3 ^= lengthWord
        Self.round(&f0, &f1, &f2, &f3)
        Self.round(&f0, &f1, &f2, &f3)
        f0 ^= lengthWord
        f2 ^= 0xFF
        for _ in 0..<4 { Self.round(&f0, &f1, &f2, &f3) }
        state = f0 ^ f1 ^ f2 ^ f3
        return state
    }

    /// The frame-length mask: big-endian uint16 of the block's first two wire bytes.
    mutating func nextLengthMask() -> UInt16 {
        let block = nextBlock()
        return UInt16(block & 0xFF) << 8 | UInt16((block >> 8) & 0xFF)
    }

    /// Go's `Int63`: big-endian uint64 of the block with the top bit cleared.
    mutating func nextInt63() -> Int64 {
        Int64(bitPattern: nextBlock().byteSwapped & 0x7FFF_FFFF_FFFF_FFFF)
    }
}

extension UInt64 {
    @inline(__always) func rotatedLeft(_ count: UInt64) -> UInt64 { (self << count) | (self >> (64 - count)) }
}
