// dnstt's Noise framing on the KCP stream (DnsttTransport's NoiseFrameDecoder and DnsttNoise):
// `length(2, big-endian) | message`, then ChaCha20-Poly1305 transport messages.
//
// Invariants, trapping when broken:
//   - arbitrary bytes give the same messages (or the same refusal) however they are split into
//     reads; a refusal is noise-frame-malformed, for a length under 16; every message is at least
//     16 bytes; the decoder never holds more than one incomplete frame beyond the last read;
//   - a peer's sealed frames (fuzzer-chosen plaintexts, cut at 4096 bytes) open in order to exactly
//     their chunks; with one byte flipped anywhere, no message opens to anything but its own chunk,
//     and a flip inside a message's ciphertext makes that message fail.
import DnsttTransport
import FuzzSupport
import PosternCrypto

enum Decoded: Equatable {
    case messages([[UInt8]])
    case failed([[UInt8]])
}

func decode(_ pieces: [ArraySlice<UInt8>]) -> Decoded {
    var decoder = NoiseFrameDecoder()
    var messages: [[UInt8]] = []
    do {
        for piece in pieces {
            decoder.append(piece)
            while let message = try decoder.nextMessage() {
                fuzzCheck(message.count >= NoiseFrameDecoder.minimumMessageLength, "a message shorter than a tag")
                messages.append(message)
            }
            fuzzCheck(decoder.bufferedBytes <= piece.count + 65535 + 2, "the decoder holds more than one incomplete frame")
        }
    } catch {
        fuzzCheck(error.code == .noiseFrameMalformed, "an unexpected error: \(error.code)")
        return .failed(messages)
    }
    return .messages(messages)
}

let key = [UInt8](repeating: 0x42, count: 32)

func checkNoiseFrames(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    guard let mode = input.byte() else { return }
    let sizes = input.chunk() ?? []
    if mode & 1 == 0 {
        let stream = input.rest()
        fuzzCheck(decode(pieces(of: stream, sizes: sizes)) == decode([stream[...]]), "the result depends on the reads")
        return
    }
    let flip = input.uint16()
    var chunks: [[UInt8]] = []
    var stream: [UInt8] = []
    let sender = NoiseCipherState(key: key, nonce: 0)
    while let count = input.uint16() {
        // Up to 12 KiB per write, so writes are cut into several messages.
        let plaintext = [UInt8](repeating: UInt8(truncatingIfNeeded: count), count: count % 12288)
        var index = 0
        while index < plaintext.count {
            let end = min(index + DnsttNoise.maximumPlaintextChunk, plaintext.count)
            chunks.append(Array(plaintext[index..<end]))
            index = end
        }
        stream += try! DnsttNoise.seal(plaintext, with: sender)
    }
    var flippedMessage: Int?
    if let flip, !stream.isEmpty {
        let position = flip % stream.count
        stream[position] ^= 0x01 << UInt8(flip >> 13)
        // Which message's ciphertext (not its length prefix) holds the flipped byte.
        var offset = 0
        for (index, chunk) in chunks.enumerated() {
            let size = 2 + chunk.count + 16
            if position >= offset + 2 && position < offset + size { flippedMessage = index }
            if position < offset + size { break }
            offset += size
        }
    }
    let receiver = NoiseCipherState(key: key, nonce: 0)
    let messages: [[UInt8]]
    switch decode(pieces(of: stream, sizes: sizes)) { case .messages(let m), .failed(let m): messages = m }
    if flip == nil || stream.isEmpty { fuzzCheck(messages.count == chunks.count, "sealed frames went missing") }
    for (index, message) in messages.enumerated() {
        guard let opened = try? DnsttNoise.open(message, with: receiver) else {
            fuzzCheck(flip != nil, "an untouched message did not open")
            return
        }
        fuzzCheck(index < chunks.count && opened == chunks[index], "a message opened to the wrong plaintext")
        fuzzCheck(index != flippedMessage, "a tampered message opened")
    }
}

runFuzzer(checkNoiseFrames)
