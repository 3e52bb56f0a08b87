import PosternCrypto
import PosternTestSupport
import Foundation
import Testing
import TransportWire
@testable import SnowflakeTransport
@testable import TurboTunnel

@Suite struct SessionPieceTests {
    @Test func sha1MatchesFIPSAndRFC6455() {
        #expect(hex(Digest.sha1(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(hex(Digest.sha1([])) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        let accept = Data(Digest.sha1(Array("dGhlIHNhbXBsZSBub25jZQ==258EAFA5-E914-47DA-95CA-C5AB0DC85B11".utf8))).base64EncodedString()
        #expect(accept == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func clientFramesAreMaskedBinary() {
        let frame = WebSocketFrameEncoder.frame(.binary, payload: Array(repeating: 0x55, count: 300))
        #expect(frame[0] == 0x82)
        #expect(frame[1] == 0x80 | 126 && frame[2] == 1 && frame[3] == 44)
        let mask = Array(frame[4..<8])
        #expect(frame[8...].enumerated().allSatisfy { $0.element ^ mask[$0.offset & 3] == 0x55 })
    }

    /// Two of our KCP engines over a link that drops a fifth of all packets (both directions,
    /// fixed pseudo-random sequence): everything arrives, in order, without a dead link.
    @Test func kcpRecoversFromLoss() {
        var a = KCPControlBlock(conversation: 9)
        var b = KCPControlBlock(conversation: 9)
        let message = pattern(50_000)
        a.send(message)
        var received: [UInt8] = []
        var state: UInt64 = 0x9e3779b97f4a7c15
        func delivered() -> Bool {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return (state >> 33) % 5 != 0
        }
        var time: UInt32 = 0
        var oversized = 0
        while received.count < message.count && time < 600_000 {
            time += 10
            for packet in a.flush(now: time) {
                if packet.count > KCPSegment.mtu { oversized += 1 }
                if delivered() { try? b.input(packet, now: time) }
            }
            received += b.receive()
            for packet in b.flush(now: time) where delivered() { try? a.input(packet, now: time) }
        }
        #expect(oversized == 0)
        #expect(received.count == message.count)
        #expect(received.elementsEqual(message))
        #expect(!a.deadLinkReached)
    }

    @Test func smuxStreamRespectsThePeerWindowAndSendsUpdates() throws {
        var stream = SmuxStreamState()
        stream.enqueue(pattern(300_000))
        let first = stream.outgoingFrames(now: 0)
        #expect(first.allSatisfy { $0.command == .push && $0.payload.count <= SmuxFrame.maxFrameSize })
        #expect(first.reduce(0) { $0 + $1.payload.count } == 262_144)
        #expect(stream.outgoingFrames(now: 1).isEmpty)
        _ = try stream.receive(.update(streamID: 3, consumed: 100_000, window: 1_048_576))
        #expect(stream.outgoingFrames(now: 2).reduce(0) { $0 + $1.payload.count } == 300_000 - 262_144)
        // Arrival sends no UPD (honest flow control); the reader's first read does, the next small
        // one does not.
        let (data, replies) = try stream.receive(SmuxFrame(command: .push, streamID: 3, payload: [1, 2, 3]))
        #expect(data == [1, 2, 3])
        #expect(replies.isEmpty)
        #expect(stream.consume(3) == .update(streamID: 3, consumed: 3, window: 1_048_576))
        #expect(try stream.receive(SmuxFrame(command: .push, streamID: 3, payload: [4])).replies.isEmpty)
        #expect(stream.consume(1) == nil)
        // A NOP keepalive every 10 s.
        #expect(stream.outgoingFrames(now: 10_002).contains(SmuxFrame(command: .nop, streamID: 0)))
    }
}

/// Our session against the test bed's snowflake server (upstream Turbo Tunnel, kcp-go, smux), over
/// a WebSocket straight to it: the server forwards the stream to the vanilla bridge's ORPort, so a
/// TLS ClientHello sent through our KCP/smux must come back as tor's ServerHello.
@Suite(.serialized) struct SessionTestBedTests {
    @Test func tlsHandshakeWithTheBridgeThroughGoServer() async throws {
        let bed = try SnowflakeTestBed.require()
        let relay = try #require(URL(string: bed["TB_SNOWFLAKE_RELAY_URL"]))
        let carrier = try await WebSocketByteStream.connect(url: relay, connector: PlainTCPConnector())
        let session = SnowflakeSession()
        try await session.start(carrier: carrier)
        try await session.write(tlsClientHello())
        var reply: [UInt8] = []
        for try await piece in session.incoming {
            reply += piece
            if reply.count >= 100 { break }
        }
        await session.close()
        // A TLS handshake record (0x16), TLS 1.x, starting with a ServerHello (type 2).
        #expect(reply.count >= 100)
        #expect(reply.first == 0x16 && reply.count > 5 && reply[1] == 0x03 && reply[5] == 0x02)
    }
}
