// Snowflake's Turbo Tunnel encapsulation (length-prefixed data and padding chunks) and its
// streaming decoder.
//
// Invariants, trapping when broken:
//   - arbitrary bytes decode to the same packets (or the same error) however they are split into
//     reads, and no packet exceeds the decoder's maximum;
//   - a stream written with the encoder (fuzzer-chosen data chunks and padding) decodes to exactly
//     the data chunks, truncated to the maximum packet size, with nothing left over.
import FuzzSupport
import SnowflakeTransport

enum Decoded: Equatable {
    case packets([[UInt8]])
    case failed([[UInt8]])
}

func decode(_ pieces: [ArraySlice<UInt8>], maxPacketSize: Int) -> Decoded {
    var decoder = Encapsulation.Decoder(maxPacketSize: maxPacketSize)
    var packets: [[UInt8]] = []
    do {
        for piece in pieces {
            decoder.append(piece)
            while let packet = try decoder.nextPacket() { packets.append(packet) }
        }
    } catch {
        return .failed(packets)
    }
    return .packets(packets)
}

func checkEncapsulation(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    guard let mode = input.byte() else { return }
    let maxPacketSize = mode & 0x80 != 0 ? TurboTunnel.maxPacketSize : 64
    let sizes = input.chunk() ?? []
    if mode & 1 == 0 {
        let stream = input.rest()
        let whole = decode([stream[...]], maxPacketSize: maxPacketSize)
        fuzzCheck(decode(pieces(of: stream, sizes: sizes), maxPacketSize: maxPacketSize) == whole, "the result depends on the reads")
        if stream.count <= 4096 {
            fuzzCheck(decode(pieces(of: stream, sizes: [1]), maxPacketSize: maxPacketSize) == whole, "byte-by-byte differs")
        }
        if case .packets(let packets) = whole { fuzzCheck(packets.allSatisfy { $0.count <= maxPacketSize }, "an oversized packet") }
        return
    }
    var stream: [UInt8] = []
    var expected: [[UInt8]] = []
    // At most 64 KiB of stream: each input byte can add 4.7 KB of padding, and 137 bytes made a
    // 600 KB stream decoded byte by byte, 0.4 s a run, past libFuzzer's 20 s timeout once the
    // machine was busy with the test bed. 64 KiB still holds chunks with every prefix length.
    while stream.count < 64 * 1024, let kind = input.byte() {
        if kind & 1 == 0 {
            // Lengths up to 16 KiB so that 1-, 2- and 3-byte prefixes all occur.
            let length = (Int(kind >> 1) << 7 | Int(input.byte() ?? 0)) % 16384
            let payload = input.take(length) + [UInt8](repeating: kind, count: max(0, length - input.remaining.count))
            let data = Array(payload.prefix(length))
            guard let chunk = try? Encapsulation.encodeData(data) else { fuzzCheck(false, "a short chunk was refused"); return }
            stream += chunk
            expected.append(Array(data.prefix(maxPacketSize)))
        } else {
            stream += Encapsulation.encodePadding(total: Int(kind >> 1) * 37)
        }
    }
    fuzzCheck(decode(pieces(of: stream, sizes: sizes), maxPacketSize: maxPacketSize) == .packets(expected),
              "an encoded stream did not decode to its chunks")
}

runFuzzer(checkEncapsulation)
