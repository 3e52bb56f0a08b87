import Testing
import TransportBase
@testable import Obfs4Transport

/// The connection's receive path: frames opened in a caller-owned buffer (`FrameDecoder.openFrames`)
/// must give exactly what the decoder's own buffer gives, with the same failures; and the gathering
/// write that hands the payloads to tor must deliver every piece in order.
@Suite struct Obfs4ReceivePathTests {
    private static let keyMaterial = (0..<72).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }

    /// Frames of every shape the decoder must handle: full, short, empty (pure padding), padded, a
    /// seed packet and an unknown type.
    private static func wire() throws -> [UInt8] {
        var encoder = FrameEncoder(keys: DirectionKeys(keyMaterial: keyMaterial))
        var wire: [UInt8] = []
        let payloadSizes = [1427, 1, 0, 700, 1427, 1427, 13, 1000]
        for (index, size) in payloadSizes.enumerated() {
            let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &+ index &* 7) }
            try encoder.appendFrame(type: Obfs4Framing.packetTypePayload, payload: payload[...], paddingLength: index % 3 == 0 || size > 1400 ? 0 : 17, to: &wire)
        }
        try encoder.appendFrame(type: 1, payload: [UInt8](repeating: 9, count: 24)[...], paddingLength: 0, to: &wire)
        try encoder.appendFrame(type: 7, payload: [1, 2, 3][...], paddingLength: 5, to: &wire)
        try encoder.appendFrame(type: Obfs4Framing.packetTypePayload, payload: [UInt8](repeating: 0xAB, count: 300)[...], paddingLength: 0, to: &wire)
        return wire
    }

    /// Feeds `wire` through `openFrames` in chunks of `chunk` bytes, keeping the unconsumed rest at
    /// the front of the buffer as Obfs4Connection does.
    private static func openInChunks(_ wire: [UInt8], chunk: Int, decoder: inout FrameDecoder) throws -> [DecodedPacket] {
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: chunk + 1448)
        defer { buffer.deallocate() }
        var packets: [DecodedPacket] = []
        var start = 0
        var end = 0
        var offset = 0
        while offset < wire.count {
            let carried = end - start
            buffer.baseAddress!.update(from: buffer.baseAddress! + start, count: carried)
            start = 0
            end = carried
            let next = min(offset + chunk, wire.count)
            _ = UnsafeMutableBufferPointer(rebasing: buffer[end...]).initialize(from: wire[offset..<next])
            end += next - offset
            offset = next
            let consumed = try decoder.openFrames(in: UnsafeMutableBufferPointer(rebasing: buffer[start..<end])) { type, payload in
                packets.append(DecodedPacket(type: type, payload: Array(payload)))
            }
            #expect(consumed <= end - start)
            start += consumed
            #expect(end - start < 1448, "more than one partial frame left unconsumed")
        }
        #expect(start == end)
        #expect(!decoder.hasPartialFrame)
        return packets
    }

    @Test(arguments: [1, 2, 3, 19, 1448, 1449, 4096, 65536])
    func openingInTheCallersBufferGivesWhatTheDecodersOwnBufferGives(chunk: Int) throws {
        let wire = try Self.wire()
        var reference = FrameDecoder(keys: DirectionKeys(keyMaterial: Self.keyMaterial))
        reference.append(wire[...])
        var expected: [DecodedPacket] = []
        while let packet = try reference.nextPacket() { expected.append(packet) }
        #expect(expected.count == 11)

        var decoder = FrameDecoder(keys: DirectionKeys(keyMaterial: Self.keyMaterial))
        #expect(try Self.openInChunks(wire, chunk: chunk, decoder: &decoder) == expected)
    }

    @Test func aForgedByteFailsAuthenticationAndTheFailureIsFinal() throws {
        var wire = try Self.wire()
        wire[1470] ^= 0x40   // inside the second frame's box (the first frame is bytes 0..<1448, the second 1448..<1487)
        var decoder = FrameDecoder(keys: DirectionKeys(keyMaterial: Self.keyMaterial))
        var payloads = 0
        #expect(Self.failure(openingAll: &wire, with: &decoder) { payloads += 1 } == .obfs4FrameAuthentication)
        #expect(payloads == 1, "the frame before the forged one is delivered, nothing after it")
        var clean = try Self.wire()
        #expect(Self.failure(openingAll: &clean, with: &decoder) { payloads += 1 } == .obfs4FrameAuthentication,
                "a failed decoder decoded again")
        #expect(payloads == 1)
    }

    @Test func anImpossibleLengthIsRejectedBeforeAnythingIsOpened() throws {
        var wire = try Self.wire()
        wire[0] ^= 0xFF   // the first frame's masked length now unmasks outside 16…1446
        var decoder = FrameDecoder(keys: DirectionKeys(keyMaterial: Self.keyMaterial))
        #expect(Self.failure(openingAll: &wire, with: &decoder) { Issue.record("a packet came out of a bad frame") } == .obfs4FrameLength)
    }

    /// The code `openFrames` fails with on all of `wire`, nil if it does not fail.
    private static func failure(openingAll wire: inout [UInt8], with decoder: inout FrameDecoder,
                                onPacket: () -> Void) -> TransportError.Code? {
        var code: TransportError.Code?
        wire.withUnsafeMutableBufferPointer { bytes in
            do throws(TransportError) {
                _ = try decoder.openFrames(in: bytes) { _, _ in onPacket() }
            } catch {
                code = error.code
            }
        }
        return code
    }

    /// More pieces than one sendmsg takes (1024), empty ones among them, and more bytes than the
    /// socket buffers hold, so the write waits for the reader part-way through a piece.
    @Test func aGatheringWriteDeliversEveryPieceInOrder() async throws {
        let listener = try LoopbackListener()
        defer { listener.close() }
        let pieceCount = 3000
        var sizes = (0..<pieceCount).map { ($0 &* 7919) % 4000 }
        sizes[5] = 0
        sizes[1024] = 0
        let total = sizes.reduce(0, +)
        let source = UnsafeMutableRawBufferPointer.allocate(byteCount: total, alignment: 1)
        defer { source.deallocate() }
        for index in 0..<total { source[index] = UInt8(truncatingIfNeeded: index &* 131 &+ index >> 9) }
        var pieces: [UnsafeRawBufferPointer] = []
        var offset = 0
        for size in sizes {
            pieces.append(UnsafeRawBufferPointer(rebasing: source[offset..<offset + size]))
            offset += size
        }
        let expected = Array(source)

        let receiver = Task {
            let accepted = try await listener.accept()
            defer { accepted.close() }
            var received: [UInt8] = []
            while true {
                let chunk = try await accepted.read(maximumCount: 65536)
                if chunk.isEmpty { return received }
                received += chunk
                if received.count < total / 2 { try await Task.sleep(for: .milliseconds(1)) }   // let the sender's buffer fill
            }
        }
        let sender = try await TCPSocket.connect(to: listener.endpoint, timeout: .seconds(30))
        try await sender.write(gathering: pieces)
        await sender.closeWrite()
        let received = try await receiver.value
        sender.close()
        #expect(received.count == total)
        #expect(received == expected)
    }
}
