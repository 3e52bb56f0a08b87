import Testing
import TransportBase
@testable import Obfs4Transport

/// The framing seals and opens from HSalsa20(key, noncePrefix) and the frame counter
/// (`Sodium.secretboxSealInPlace(box:counter:subkey:)`) instead of calling crypto_secretbox with the
/// whole nonce per frame. Both must give the same bytes, and a box with any byte changed must fail
/// to open and stay as it was.
@Suite struct Obfs4CipherTests {
    private static let key = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 3) }
    private static let noncePrefix = (0..<16).map { UInt8(truncatingIfNeeded: $0 &* 53 &+ 101) }
    private static let subkey = Sodium.xsalsa20Subkey(key: key, noncePrefix: noncePrefix)

    private static func nonce(_ counter: UInt64) -> [UInt8] {
        noncePrefix + (0..<8).reversed().map { UInt8(truncatingIfNeeded: counter >> ($0 * 8)) }
    }

    /// tag placeholder(16) | plaintext, sealed in place by libsodium's crypto_secretbox_easy.
    private static func referenceBox(_ plaintext: [UInt8], counter: UInt64) -> [UInt8] {
        var box = [UInt8](repeating: 0, count: 16) + plaintext
        box.withUnsafeMutableBufferPointer { b in
            nonce(counter).withUnsafeBufferPointer { n in
                key.withUnsafeBufferPointer { Sodium.secretboxSealInPlace(box: b, nonce: n.baseAddress!, key: $0.baseAddress!) }
            }
        }
        return box
    }

    private static func sealed(_ plaintext: [UInt8], counter: UInt64) -> [UInt8] {
        var box = [UInt8](repeating: 0, count: 16) + plaintext
        box.withUnsafeMutableBufferPointer { b in
            subkey.withUnsafeBufferPointer { Sodium.secretboxSealInPlace(box: b, counter: counter, subkey: $0.baseAddress!) }
        }
        return box
    }

    private static func opened(_ box: inout [UInt8], counter: UInt64) -> Bool {
        box.withUnsafeMutableBufferPointer { b in
            subkey.withUnsafeBufferPointer { Sodium.secretboxOpenInPlace(box: b, counter: counter, subkey: $0.baseAddress!) }
        }
    }

    // Lengths around the 32-byte half block and the 64-byte blocks, and the framing's extremes
    // (an empty box, a full 1430-byte packet); counters from the first frame to the last.
    @Test(arguments: [0, 1, 31, 32, 33, 63, 64, 65, 96, 97, 700, 1398, 1429, 1430])
    func theSubkeyFormGivesLibsodiumsSecretbox(length: Int) throws {
        try Sodium.ensureInitialised()
        let plaintext = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ length) }
        for counter: UInt64 in [1, 2, 255, 256, 0x0102_0304_0506_0708, .max] {
            let reference = Self.referenceBox(plaintext, counter: counter)
            #expect(Self.sealed(plaintext, counter: counter) == reference, "seal, length \(length), counter \(counter)")
            var box = reference
            #expect(Self.opened(&box, counter: counter), "open, length \(length), counter \(counter)")
            #expect(Array(box[16...]) == plaintext)
            var other = reference
            #expect(!Self.opened(&other, counter: counter &+ 1), "opened under the next counter")
            #expect(other == reference, "a box that failed to open was changed")
        }
    }

    @Test func anyChangedByteFailsAndLeavesTheBoxAsItWas() throws {
        try Sodium.ensureInitialised()
        let plaintext = (0..<1430).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let reference = Self.referenceBox(plaintext, counter: 42)
        for index in [0, 15, 16, 17, 47, 48, 79, 80, 700, reference.count - 1] {
            var box = reference
            box[index] ^= 0x01
            let forged = box
            #expect(!Self.opened(&box, counter: 42), "byte \(index) changed and the box opened")
            #expect(box == forged, "byte \(index): a box that failed to open was changed")
        }
    }
}
