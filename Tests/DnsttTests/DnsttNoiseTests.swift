import PosternCrypto
import Testing
@testable import DnsttTransport

/// The dnstt notes' §7.3 handshake (dnstt's prologue, keys 0x01-0x20 for the server's static key,
/// 0x21-0x40 and 0x41-0x60 for the ephemerals), with PosternCrypto's Noise NK and our framing.
@Suite struct DnsttNoiseTests {
    let serverPrivate = Array(UInt8(0x01)...0x20)
    let serverPublic = bytes(hex: "07a37cbc142093c8b755dc1b10e86cb426374ad16aa853ed0bdfc0b2b86d1c7c")

    @Test func handshakeAndFirstTransportMessagesMatchTheNotes() throws {
        let initiator = try NoiseNKInitiator(serverPublicKey: serverPublic, prologue: DnsttNoise.prologue,
                                             ephemeralPrivateKey: Array(0x21...0x40))
        let responder = try NoiseNKResponder(staticPrivateKey: serverPrivate, prologue: DnsttNoise.prologue,
                                             ephemeralPrivateKey: Array(0x41...0x60))
        #expect(responder.staticPublicKey == serverPublic)
        let first = try DnsttNoise.firstMessage(initiator)
        #expect(hex(first) == "0030" + "5869aff450549732cbaaed5e5df9b30a6da31cb0e5742bad5ad4a1a768f1a67b1708678541fa2c10575a9363241a0bf9")

        var serverSide = NoiseFrameDecoder()
        serverSide.append(first)
        let message1 = try #require(try serverSide.nextMessage())
        #expect(try responder.readHandshake(message1).isEmpty)
        let (message2, serverSend, serverReceive) = try responder.writeHandshake(payload: [])
        #expect(hex(message2) == "64b101b1d0be5a8704bd078f9895001fc03e8e9f9522f188dd128d9846d484661bedc42c3cb457e78bb1f9011792e301")

        var clientSide = NoiseFrameDecoder()
        // The server's frame arrives in two pieces.
        let framed2 = DnsttNoise.frame(message2)
        clientSide.append(framed2[..<7])
        #expect(try clientSide.nextMessage() == nil)
        clientSide.append(framed2[7...])
        let (send, receive) = try DnsttNoise.finish(initiator, message: try #require(try clientSide.nextMessage()))
        #expect(hex(initiator.handshakeHash) == "7f0e30a01b4bde60a97eaa3801f5d4b395ff4014bcf1bdf82f6e7633ff56667a")

        let syn = try DnsttNoise.seal(bytes(hex: "0200000003000000"), with: send)
        #expect(hex(syn) == "0018" + "c7f5e19ba3c314d79d87c656c430ea4fd06c0ad52689f7f9")
        let push = try DnsttNoise.seal(bytes(hex: "020205000300000068656c6c6f"), with: send)
        #expect(hex(push) == "001d" + "c4c8ad619530cdb9c89508ab497f8fe683cd864e9e280de01825f7cf55")

        serverSide.append(syn + push)
        #expect(try DnsttNoise.open(try #require(try serverSide.nextMessage()), with: serverReceive) == bytes(hex: "0200000003000000"))
        #expect(try DnsttNoise.open(try #require(try serverSide.nextMessage()), with: serverReceive) == bytes(hex: "020205000300000068656c6c6f"))
        #expect(try serverSide.nextMessage() == nil)

        // The other direction opens too; a tampered message does not.
        var back = try DnsttNoise.seal(Array("world".utf8), with: serverSend)
        var decoder = NoiseFrameDecoder()
        decoder.append(back)
        #expect(try DnsttNoise.open(try #require(try decoder.nextMessage()), with: receive) == Array("world".utf8))
        back = try DnsttNoise.seal(Array("again".utf8), with: serverSend)
        back[5] ^= 1
        decoder.append(back)
        let tampered = try #require(try decoder.nextMessage())
        #expect(throws: DnsttError.self) { try DnsttNoise.open(tampered, with: receive) }
    }

    @Test func longWritesAreCutAt4096Bytes() throws {
        let initiator = try DnsttNoise.initiator(serverPublicKey: serverPublic)
        let responder = try NoiseNKResponder(staticPrivateKey: serverPrivate, prologue: DnsttNoise.prologue)
        var server = NoiseFrameDecoder()
        server.append(try DnsttNoise.firstMessage(initiator))
        _ = try responder.readHandshake(try #require(try server.nextMessage()))
        let (message2, _, serverReceive) = try responder.writeHandshake(payload: [])
        let (send, _) = try DnsttNoise.finish(initiator, message: message2)
        #expect(try DnsttNoise.seal([], with: send).isEmpty)
        let data = (0..<10_000).map { UInt8(truncatingIfNeeded: $0) }
        server.append(try DnsttNoise.seal(data, with: send))
        var sizes: [Int] = []
        var opened: [UInt8] = []
        while let message = try server.nextMessage() {
            let plain = try DnsttNoise.open(message, with: serverReceive)
            sizes.append(plain.count)
            opened += plain
        }
        #expect(sizes == [4096, 4096, 1808])
        #expect(opened == data)
    }

    @Test func frameDecoderRefusesShortLengthsAndHoldsOneFrame() throws {
        for length in 0..<16 {
            var decoder = NoiseFrameDecoder()
            decoder.append([0, UInt8(length)] + [UInt8](repeating: 0, count: length))
            #expect(throws: DnsttError.self) { try decoder.nextMessage() }
        }
        var decoder = NoiseFrameDecoder()
        decoder.append([0xFF, 0xFF] + [UInt8](repeating: 7, count: 65534))
        #expect(try decoder.nextMessage() == nil)
        #expect(decoder.bufferedBytes == 65536)
        decoder.append([7, 0x00])
        #expect(try decoder.nextMessage()?.count == 65535)
        #expect(decoder.bufferedBytes == 1)
    }

    /// A responder that sends a payload in its handshake message is refused, as dnstt refuses it.
    @Test func aServerPayloadIsRefused() throws {
        let initiator = try DnsttNoise.initiator(serverPublicKey: serverPublic)
        let responder = try NoiseNKResponder(staticPrivateKey: serverPrivate, prologue: DnsttNoise.prologue)
        let first = try DnsttNoise.firstMessage(initiator)
        _ = try responder.readHandshake(Array(first.dropFirst(2)))
        let (message2, _, _) = try responder.writeHandshake(payload: [1])
        #expect(throws: DnsttError.self) { try DnsttNoise.finish(initiator, message: message2) }
    }
}
