// dnstt's client session (DnsttTransport's DnsttSessionCore) fed responses by a resolver that
// forges, reorders, duplicates and drops them, next to a real server (a minimal one, below: KCP
// with the server's MTU 932, the Noise NK responder, smux) whose answers it holds back and replays.
//
// Each input is a list of operations (first byte of each):
//   0  clock: advance 1-2550 ms, tick, and let the server answer every query due (answers pooled)
//   1  deliver a pooled answer (index chosen; it stays in the pool, so it may come again, in any order)
//   2  deliver a forged response: raw bytes (not even DNS, most of the time)
//   3  deliver a forged dnstt response under the domain: fuzzer-chosen KCP segments of the session's
//      own conversation (so they reach KCP, Noise and smux), any command, sn, una, payload
//   4  the client writes stream bytes; 5  the server writes stream bytes; 6  the reader consumes
//
// Invariants, trapping when broken (after every operation):
//   - no trap; a thrown error (the session ends) has a code from the set below, and ends the input;
//   - tokens ≤ 16, queued packets ≤ 128, KCP holds ≤ receiveBufferLimit segments, the Noise decoder
//     holds at most one incomplete frame (65537 bytes), smux's unread bytes ≤ its 1 MiB window;
//   - every query is at most 282 bytes with labels ≤ 63 and a name ≤ 255 octets (DnsMessage's
//     decoder checks both when the server reads it);
//   - the reader gets only what the server wrote, in order (a prefix of it): forged bytes never
//     pass Noise.
import DnsttTransport
import FuzzSupport
import PosternCrypto
import TurboTunnel

let domain = DnsName(parsing: "t.example.com")!
let serverPrivate = [UInt8](repeating: 0x11, count: 32)
let conversation: UInt32 = 0x0102_0304
let allowedCodes: Set<String> = ["noise-frame-malformed", "handshake-timeout", "downstream-silent", "send-stalled", "dead-link",
                                 "smux-malformed", "smux-wrong-version", "smux-window-exceeded"]

/// The server's side: reads queries as dnstt-server does, answers with what KCP has for the client.
final class Server {
    let responder: NoiseNKResponder
    var kcp = KCPControlBlock(conversation: conversation, mtu: 932, window: 64)
    var frames = NoiseFrameDecoder()
    var send: NoiseCipherState?
    var outgoing: [[UInt8]] = []
    var written: [UInt8] = []

    init() { responder = try! NoiseNKResponder(staticPrivateKey: serverPrivate, prologue: DnsttNoise.prologue) }

    func answer(_ query: [UInt8], now: UInt32) -> [UInt8]? {
        guard let message = try? DnsMessage(decoding: query) else {
            fuzzCheck(false, "the client sent a query that does not decode")
            return nil
        }
        fuzzCheck(query.count <= 282, "a query of \(query.count) bytes")
        guard let name = message.questions.first?.name, let reading = DnsttWire.serverReading(of: name, domain: domain) else {
            fuzzCheck(false, "the server cannot read the client's query name")
            return nil
        }
        for packet in reading.packets { try? kcp.input(packet, now: now) }
        let bytes = kcp.receive()
        if !bytes.isEmpty { frames.append(bytes) }
        // The client's frames after the handshake are not read (the server only needs its keys).
        while send == nil, let first = try? frames.nextMessage() {
            guard (try? responder.readHandshake(first)) != nil, let reply = try? responder.writeHandshake(payload: []) else { break }
            send = reply.send
            kcp.send(DnsttNoise.frame(reply.message))
        }
        outgoing += kcp.flush(now: now)
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

    func write(_ bytes: [UInt8]) {
        guard let send, !bytes.isEmpty else { return }
        let frame = SmuxFrame(command: .push, streamID: 3, payload: bytes)
        guard let sealed = try? DnsttNoise.seal(frame.encoded, with: send) else { return }
        kcp.send(sealed)
        written += bytes
    }
}

func checkSession(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    let publicKey = try! X25519.publicKey(privateKey: serverPrivate)
    var core = try! DnsttSessionCore(serverPublicKey: publicKey, domain: domain, mtu: try! DnsttWire.mtu(domain: domain), now: 0,
                                     handshakeLimit: .seconds(60), conversation: conversation)
    let server = Server()
    var pool: [[UInt8]] = []
    var now: UInt32 = 0
    var read: [UInt8] = []
    var unconsumed = 0
    func deliver(_ response: [UInt8]) throws(DnsttError) {
        let data = try core.receiveResponse(response, now: now)
        read += data
        unconsumed += data.count
    }
    var operations = 0
    while let op = input.byte(), operations < 400 {
        operations += 1
        do throws(DnsttError) {
            switch op % 7 {
            case 0:
                now &+= UInt32(input.byte() ?? 1) * 10 + 1
                try core.tick(now: now)
                for query in core.queries(now: now) {
                    if let answer = server.answer(query, now: now), pool.count < 256 { pool.append(answer) }
                }
            case 1:
                guard !pool.isEmpty, let index = input.byte() else { continue }
                try deliver(pool[Int(index) % pool.count])
            case 2:
                try deliver(input.take(input.uint16() ?? 0))
            case 3:
                var packets: [[UInt8]] = []
                for _ in 0..<Int((input.byte() ?? 0) % 4) {
                    var segment = KCPSegment(conversation: conversation, command: KCPSegment.Command(rawValue: 81 + (input.byte() ?? 0) % 5),
                                             window: UInt16(input.uint16() ?? 0), timestamp: UInt32(input.uint16() ?? 0),
                                             sequenceNumber: UInt32(input.byte() ?? 0), unacknowledged: UInt32(input.byte() ?? 0),
                                             payload: input.chunk() ?? [])
                    if input.byte().map({ $0 & 1 == 1 }) ?? false { segment.payload = Array(segment.payload.prefix(3)) }
                    var packet: [UInt8] = []
                    segment.encode(into: &packet)
                    packets.append(packet)
                }
                let answer = DnsResourceRecord(name: domain, type: DnsResourceRecord.typeTXT, class: DnsResourceRecord.classIN, ttl: 0,
                                               data: DnsttWire.encodeTXT(DnsttWire.serverPayload(packets)))
                try deliver(DnsMessage(id: 0, flags: 0x8400, answers: [answer]).encoded)
            case 4:
                core.write(input.chunk() ?? [])
            case 5:
                server.write(input.take(Int(input.uint16() ?? 0)))
            default:
                let count = min(unconsumed, Int(input.uint16() ?? 0))
                try core.consume(count)
                unconsumed -= count
            }
        } catch {
            fuzzCheck(allowedCodes.contains(error.code.rawValue) || error.code.rawValue.hasPrefix("noise-"),
                      "an unexpected error: \(error.code)")
            fuzzCheck(!error.message.contains("example"), "an error names the domain")
            return
        }
        fuzzCheck(core.schedule.tokens <= DnsttPollSchedule.tokenLimit, "\(core.schedule.tokens) tokens")
        fuzzCheck(core.schedule.queue.count <= DnsttPollSchedule.queueLimit, "\(core.schedule.queue.count) queued packets")
        fuzzCheck(core.kcp.heldSegments <= KCPControlBlock.receiveBufferLimit, "KCP holds \(core.kcp.heldSegments) segments")
        fuzzCheck(core.noiseFrames.bufferedBytes <= 65537, "the Noise decoder holds \(core.noiseFrames.bufferedBytes) bytes")
        fuzzCheck(core.stream.unread <= SmuxStreamState.streamBuffer, "smux holds \(core.stream.unread) unread bytes")
        fuzzCheck(read.count <= server.written.count && read[...] == server.written[..<read.count],
                  "the reader got bytes the server did not write")
    }
}

runFuzzer(checkSession)
