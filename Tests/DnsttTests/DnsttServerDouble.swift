import PosternCrypto
import Testing
import TurboTunnel
@testable import DnsttTransport

/// The smallest in-process dnstt server for DnsttSessionCore's tests (Swift only, no sockets): it
/// reads queries as dnstt-server does (DnsttWire's server reading), runs KCP with the server's MTU
/// 932, answers the Noise NK handshake as the responder and speaks smux on the stream, echoing
/// nothing by itself: the test decides what it sends. Not a peer for interoperability (the Go
/// stand-in in Tests/Support/dnstt-testbed is); it checks the client's own layering and deadlines.
final class DnsttServerDouble {
    let domain: DnsName
    let privateKey = X25519.generatePrivateKey()
    let publicKey: [UInt8]
    private let responder: NoiseNKResponder
    private var kcp: KCPControlBlock?
    private var frames = NoiseFrameDecoder()
    private var smux = SmuxFrame.Decoder()
    private var send: NoiseCipherState?
    private var receive: NoiseCipherState?
    /// Stream bytes the client sent, and the smux commands seen.
    var received: [UInt8] = []
    var commands: [SmuxFrame.Command] = []
    /// Packets the server has for the client, sent in answers to queries.
    private var outgoing: [[UInt8]] = []

    init(domain: DnsName) throws {
        self.domain = domain
        responder = try NoiseNKResponder(staticPrivateKey: privateKey, prologue: DnsttNoise.prologue)
        publicKey = responder.staticPublicKey
    }

    /// Answers one query (wire format) with whatever packets are waiting, up to 1200 payload bytes (a 932-byte KCP packet and its length fit).
    func answer(_ query: [UInt8], now: UInt32) throws -> [UInt8] {
        let message = try DnsMessage(decoding: query)
        let name = message.questions[0].name
        let reading = try #require(DnsttWire.serverReading(of: name, domain: domain))
        for packet in reading.packets {
            if kcp == nil {
                var conversation: UInt32 = 0
                for index in (0..<4).reversed() { conversation = conversation << 8 | UInt32(packet[index]) }
                kcp = KCPControlBlock(conversation: conversation, mtu: 932, window: 64)
            }
            try kcp!.input(packet, now: now)
        }
        try pump(now: now)
        var packets: [[UInt8]] = []
        var size = 0
        while let next = outgoing.first, size + next.count + 2 <= 1_200 {
            packets.append(outgoing.removeFirst())
            size += next.count + 2
        }
        let answer = DnsResourceRecord(name: name, type: DnsResourceRecord.typeTXT, class: DnsResourceRecord.classIN, ttl: 60,
                                       data: DnsttWire.encodeTXT(DnsttWire.serverPayload(packets)))
        return DnsMessage(id: message.id, flags: 0x8400, questions: message.questions, answers: [answer]).encoded
    }

    /// Stream bytes for the client (PSH frames on stream 3).
    func write(_ bytes: [UInt8], now: UInt32) throws {
        var index = 0
        while index < bytes.count {
            let end = min(index + 1000, bytes.count)
            try sendFrame(SmuxFrame(command: .push, streamID: 3, payload: Array(bytes[index..<end])))
            index = end
        }
        try pump(now: now)
    }

    func sendFrame(_ frame: SmuxFrame) throws {
        kcp!.send(try DnsttNoise.seal(frame.encoded, with: try #require(send)))
    }

    private func pump(now: UInt32) throws {
        guard kcp != nil else { return }
        frames.append(kcp!.receive())
        while let message = try frames.nextMessage() {
            if let receive {
                smux.append(try DnsttNoise.open(message, with: receive))
                while let frame = try smux.nextFrame() {
                    commands.append(frame.command)
                    if frame.command == .push { received += frame.payload }
                }
            } else {
                #expect(try responder.readHandshake(message).isEmpty)
                let (reply, send, receive) = try responder.writeHandshake(payload: [])
                self.send = send
                self.receive = receive
                kcp!.send(DnsttNoise.frame(reply))
            }
        }
        outgoing += kcp!.flush(now: now)
    }
}
