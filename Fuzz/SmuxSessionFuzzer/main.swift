// The client side of an smux v2 session as a state machine: the frame decoder fed the server's
// bytes in fuzzer-chosen reads, the stream state fed the decoded frames, and between them the local
// reader (tor) reading some of what arrived, the local writer queueing data, and the clock.
//
// Each input: a chunk of read sizes, the window (a byte × 64 + 64; production: 1 MiB), then up to
// 32 operations (first byte of each):
//   0 bytes      a chunk of raw bytes from the server
//   1 frame      a frame built from fuzzer fields (any command, stream ID 3 or another, payload up
//                to 1020 bytes), in one read
//   2 read       tor reads up to a byte × 4 of what arrived
//   3 write      tor writes a byte × 4 bytes
//   4 tick       outgoing frames at a clock a byte × 1 s later
//
// Invariants, trapping when broken:
//   - no Swift trap;
//   - bytes waiting for tor never exceed the window we grant,
//     and a data frame that would exceed it is refused with smux-window-exceeded;
//   - the decoder holds at most one incomplete frame beyond the last read;
//   - every window update we send names exactly what tor has read, with our window;
//   - what we send stays within the window the peer last announced, in frames of at most 32768.
import FuzzSupport
import TurboTunnel

func checkSession(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    let sizes = input.chunk() ?? []
    var decoder = SmuxFrame.Decoder()
    // A small window (the production one is 1 MiB; the arithmetic is the same) keeps the
    // overrun within reach of short inputs with small frames.
    let window = UInt32(input.byte() ?? 0) * 64 + 64
    var stream = SmuxStreamState(receiveWindow: window)
    var now: UInt32 = 0
    var arrived = 0, read = 0
    var operations = 0
    var failed = false

    func deliver(_ frame: SmuxFrame) {
        let before = stream.unread
        do {
            let (data, _) = try stream.receive(frame)
            arrived += data.count
        } catch {
            fuzzCheck(error.code == .smuxWindowExceeded, "an unexpected error: \(error.code)")
            fuzzCheck(Int(before) + frame.payload.count > Int(window), "a frame within the window was refused")
            failed = true
        }
        fuzzCheck(stream.unread <= window, "more unread than the window")
        fuzzCheck(Int(stream.unread) == arrived - read, "unread bytes do not match arrivals minus reads")
    }

    func feed(_ bytes: [UInt8]) {
        for piece in pieces(of: bytes, sizes: sizes) where !failed {
            decoder.append(piece)
            fuzzCheck(decoder.bufferedBytes <= SmuxFrame.headerSize + 65535 + piece.count, "the decoder holds too much")
            do {
                while !failed, let frame = try decoder.nextFrame() { deliver(frame) }
            } catch {
                failed = true  // version or command: the session ends
            }
        }
    }

    while !failed, let operation = input.byte(), operations < 32 {
        operations += 1
        switch operation % 5 {
        case 0:
            feed(input.chunk() ?? [])
        case 1:
            let fields = input.take(4) + [0, 0, 0, 0]
            let command = SmuxFrame.Command(rawValue: fields[0] % 5)
            let streamID: UInt32 = fields[1] & 3 == 0 ? UInt32(fields[1]) : 3
            var payload = [UInt8](repeating: fields[2], count: Int(fields[3]) << 2)
            if command == .update { payload = input.take(8) }
            // One read: split-independence is SmuxFuzzer's; here the state behind the decoder.
            let encoded = SmuxFrame(command: command, streamID: streamID, payload: payload).encoded
            decoder.append(encoded)
            fuzzCheck(decoder.bufferedBytes <= SmuxFrame.headerSize + 65535 + encoded.count, "the decoder holds too much")
            do {
                while !failed, let frame = try decoder.nextFrame() { deliver(frame) }
            } catch {
                failed = true
            }
        case 2:
            let want = Int(input.byte() ?? 0) * 4
            let take = min(want, Int(stream.unread))
            let consumedBefore = stream.consumed
            if let update = stream.consume(take) {
                fuzzCheck(update.windowUpdate?.consumed == consumedBefore &+ UInt32(take), "the update does not name what tor read")
                fuzzCheck(update.windowUpdate?.window == window, "the update does not grant our window")
                fuzzCheck(update.streamID == stream.streamID, "the update names another stream")
            }
            read += take
        case 3:
            stream.enqueue([UInt8](repeating: 0x33, count: Int(input.byte() ?? 0) * 4))
        default:
            now &+= UInt32(input.byte() ?? 0) * 1000
            let frames = stream.outgoingFrames(now: now)
            fuzzCheck(frames.allSatisfy { $0.payload.count <= SmuxFrame.maxFrameSize }, "an outgoing frame is too long")
            if frames.contains(where: { $0.command == .push }) {
                fuzzCheck(stream.sent &- stream.peerConsumed <= stream.peerWindow, "we sent beyond the peer's window")
            }
        }
    }
}

runFuzzer(checkSession)
