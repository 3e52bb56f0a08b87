import Obfs4Transport
import TransportBase

/// Drives the frame decoder with fuzzer-chosen input (used by the `Obfs4FrameFuzzer` libFuzzer target).
/// The framing types it drives are `package` API of Obfs4Transport: this package's fuzz targets see
/// them, users of the library do not.
///
/// Random bytes almost never carry a valid Poly1305 tag, so feeding them to the decoder alone would
/// only exercise the length check. Instead the input is a little program: it builds a stream from
/// well-formed packets, arbitrary (possibly malformed) packets sealed with the right keys, raw
/// garbage and bit flips, then feeds the stream to a decoder in fuzzer-chosen chunk sizes. The
/// harness traps (a finding) when an invariant breaks:
/// - a stream of well-formed frames decodes to exactly what was encoded, with nothing left over;
/// - a malformed sealed packet is rejected at that packet, with the packets before it intact;
/// - once the decoder fails, it keeps failing.
package enum Obfs4FrameFuzzHarness {
    package static func run(_ input: UnsafeRawBufferPointer) {
        let bytes = Array(input)
        guard let chunkSelector = bytes.first else { return }
        let keyMaterial = (0..<72).map { UInt8($0) }
        var encoder = FrameEncoder(keys: DirectionKeys(keyMaterial: keyMaterial))
        var decoder = FrameDecoder(keys: DirectionKeys(keyMaterial: keyMaterial))
        var wire: [UInt8] = []
        var expected: [DecodedPacket] = []
        var expectFailureAfterExpected = false
        var unpredictable = false
        var cursor = 1

        func next() -> Int? {
            guard cursor < bytes.count else { return nil }
            defer { cursor += 1 }
            return Int(bytes[cursor])
        }
        func take(_ count: Int) -> ArraySlice<UInt8> {
            let end = min(cursor + count, bytes.count)
            defer { cursor = end }
            return bytes[cursor..<end]
        }

        while let operation = next(), wire.count < 1 << 16 {
            switch operation % 4 {
            case 0:   // a well-formed packet
                guard let type = next(), let high = next(), let low = next(), let pad = next() else { break }
                let payload = take((high << 8 | low) % (Obfs4Framing.maximumPayloadLength + 1))
                let padding = min(pad * 6, Obfs4Framing.maximumPayloadLength - payload.count)
                try! encoder.appendFrame(type: UInt8(type), payload: payload, paddingLength: padding, to: &wire)
                if !expectFailureAfterExpected { expected.append(DecodedPacket(type: UInt8(type), payload: Array(payload))) }
            case 1:   // arbitrary packet bytes, sealed with the right keys
                guard let high = next(), let low = next() else { break }
                let raw = take((high << 8 | low) % (Obfs4Framing.maximumPacketLength + 1))
                try! encoder.appendRawPacket(raw, to: &wire)
                guard !expectFailureAfterExpected else { break }
                let declared = raw.count >= 3 ? Int(raw[raw.startIndex + 1]) << 8 | Int(raw[raw.startIndex + 2]) : Int.max
                if raw.count < 3 || declared > raw.count - 3 {
                    expectFailureAfterExpected = true
                } else {
                    expected.append(DecodedPacket(type: raw[raw.startIndex], payload: Array(raw.dropFirst(3).prefix(declared))))
                }
            case 2:   // raw garbage on the wire
                guard let count = next() else { break }
                wire += take(count)
                unpredictable = true
            default:  // flip one bit somewhere in the stream
                guard let high = next(), let low = next(), !wire.isEmpty else { break }
                wire[(high << 8 | low) % wire.count] ^= UInt8(1 << (low % 8))
                unpredictable = true
            }
        }

        var decoded: [DecodedPacket] = []
        var failed = false
        let chunkSize = 1 + Int(chunkSelector) * 7
        var offset = 0
        feeding: while offset < wire.count {
            let end = min(offset + chunkSize, wire.count)
            decoder.append(wire[offset..<end])
            offset = end
            do {
                while let packet = try decoder.nextPacket() { decoded.append(packet) }
            } catch {
                failed = true
                break feeding
            }
        }
        if failed {
            // Failures are sticky.
            decoder.append([0, 0, 0])
            do {
                _ = try decoder.nextPacket()
                preconditionFailure("the decoder recovered after a failure")
            } catch {}
        }
        guard !unpredictable else { return }
        precondition(decoded == expected, "decoded packets differ from the encoded ones")
        precondition(failed == expectFailureAfterExpected, "a malformed packet was accepted or a valid one rejected")
        if !failed { precondition(!decoder.hasPartialFrame, "bytes left over after whole frames") }
    }
}
