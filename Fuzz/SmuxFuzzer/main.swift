// smux v2 frames (8-byte header, then data) and their streaming decoder.
//
// Invariants, trapping when broken:
//   - arbitrary bytes decode to the same frames (or the same error) however they are split into
//     reads, and the frames re-encode to exactly the bytes they were decoded from;
//   - a v2 window-update frame's fields read back as written;
//   - frames the fuzzer builds (any valid command, stream ID and payload) decode to themselves.
import FuzzSupport
import TurboTunnel

enum Decoded: Equatable {
    case frames([SmuxFrame])
    case failed([SmuxFrame])
}

func decode(_ pieces: [ArraySlice<UInt8>]) -> Decoded {
    var decoder = SmuxFrame.Decoder()
    var frames: [SmuxFrame] = []
    do {
        for piece in pieces {
            decoder.append(piece)
            while let frame = try decoder.nextFrame() { frames.append(frame) }
        }
    } catch {
        return .failed(frames)
    }
    return .frames(frames)
}

func checkSmux(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    guard let mode = input.byte() else { return }
    let sizes = input.chunk() ?? []
    if mode & 1 == 0 {
        let stream = input.rest()
        let whole = decode([stream[...]])
        fuzzCheck(decode(pieces(of: stream, sizes: sizes)) == whole, "the result depends on the reads")
        let frames: [SmuxFrame]
        switch whole { case .frames(let f), .failed(let f): frames = f }
        let encoded = frames.flatMap(\.encoded)
        fuzzCheck(stream.starts(with: encoded), "frames do not re-encode to the bytes they came from")
        for frame in frames where frame.command == .update && frame.payload.count == 8 {
            let update = frame.windowUpdate!
            fuzzCheck(SmuxFrame.update(streamID: frame.streamID, consumed: update.consumed, window: update.window) == frame,
                      "a window update does not round-trip")
        }
        return
    }
    var frames: [SmuxFrame] = []
    while let command = input.byte() {
        let id = UInt32(input.uint16() ?? 3) << 8 | UInt32(command)
        let length = (input.uint16() ?? 0) % 4096
        let payload = input.take(length)
        frames.append(SmuxFrame(command: SmuxFrame.Command(rawValue: command % 5), streamID: id, payload: payload))
    }
    fuzzCheck(decode(pieces(of: frames.flatMap(\.encoded), sizes: sizes)) == .frames(frames), "built frames did not decode to themselves")
}

runFuzzer(checkSmux)
