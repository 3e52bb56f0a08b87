import PosternCrypto
import TurboTunnel

// The logic of one dnstt client session, without clocks, tasks or sockets (docs/plans/DNSTT.md §2;
// the dnstt protocol notes §1-§3): DNS responses in, DNS queries out, the caller's stream bytes in
// both directions. DnsttSession runs it on a resolver link; tests and DnsttSessionFuzzer drive it
// directly on a fake clock.
//
// Layers, bottom up: the DNS messages (DnsttWire) carry KCP packets (one per query up, any number
// per response down); KCP (conversation random, window 64, MTU from the domain, stream mode, 10 ms
// interval) carries a byte stream of Noise messages (`[u16 BE length][message]`); the first pair is
// the NK handshake (our `-> e, es` goes out at once, the server's `<- e, ee` comes back), after
// which every message is a transport message holding smux v2 bytes; smux carries the one stream
// (ID 3, opened by a SYN right after the handshake).
//
// Hostile input (the resolver, and anyone who can forge its answers, sees and can write every byte
// that comes down): a response that does not parse or does not pass dnstt's checks is ignored and
// counted, as the reference client ignores it; a packet KCP refuses (wrong conversation, malformed)
// is ignored and counted too, since anyone can send those. Memory: responses are at most the link's
// cap, packets per response at most payload/2, KCP holds at most receiveBufferLimit segments of at
// most maximumIncomingPayload bytes, the Noise decoder one incomplete frame (≤ 65537 bytes), smux
// at most its 1 MiB window of unread stream data, and the send queue 128 packets. Only what passed
// Noise authentication can end the session: a Noise frame of impossible length, a second handshake
// message that does not verify, a transport message that does not decrypt, or an smux violation
// (they corrupt the one byte stream for good).

/// One dnstt session's protocol state (see the top of this file).
package struct DnsttSessionCore {
    /// Where the session is.
    package enum Phase: Sendable, Equatable {
        /// Our handshake message is out; the server's has not come back yet.
        case handshaking
        /// Noise is done and the SYN is sent; waiting for KCP to acknowledge it.
        case opening
        /// The stream is open.
        case open
    }

    /// KCP's send and receive window in segments (dnstt's SetWindowSize(64, 64)).
    package static let kcpWindow: UInt32 = 64
    /// The longest KCP segment payload accepted from the server: its MTU is 932 (notes §6.4),
    /// ours only about 130, so the inbound cap is separate from our MSS.
    package static let maximumIncomingPayload = 4096
    /// No KCP data from the server for this long ends the session (smux's 2-min keepalive timeout,
    /// which the server applies too; it sends a NOP every 10 s). A server that falls silent
    /// usually meets the send stall first: our own NOP, 10 s after the last one, stays
    /// unacknowledged, so the stall ends the session about 70 s after the silence began.
    package static let silenceLimitMs: UInt32 = 120_000
    /// Data waiting without progress (nothing acknowledged, no smux window opening) for this long
    /// ends the session, as in SnowflakeSession.
    package static let sendStallLimitMs: UInt32 = 60_000
    /// How KCP and smux errors name the sender.
    static let kcpPeer = "the dnstt server (or the resolver in between)"
    static let smuxPeer = "the dnstt server"

    package let clientID: ClientID
    package let domain: DnsName
    package private(set) var phase = Phase.handshaking
    package private(set) var kcp: KCPControlBlock
    package private(set) var schedule: DnsttPollSchedule
    private let initiator: NoiseNKInitiator
    private var sendCipher: NoiseCipherState?
    private var receiveCipher: NoiseCipherState?
    package private(set) var noiseFrames = NoiseFrameDecoder()
    package private(set) var smuxFrames = SmuxFrame.Decoder(peer: DnsttSessionCore.smuxPeer)
    package private(set) var stream = SmuxStreamState(peer: DnsttSessionCore.smuxPeer)
    /// The handshake deadline, counted from `init`.
    private let handshakeLimitMs: UInt32
    private let startedAt: UInt32
    /// When KCP last accepted a packet from the server.
    private var lastDownstream: UInt32
    private var stalledSince: UInt32
    private var lastProgress: (acknowledged: UInt32, sent: UInt32) = (0, 0)

    /// Responses ignored: not a DNS message, or not one dnstt's checks accept.
    package private(set) var ignoredResponses = 0
    /// Packets KCP refused (another conversation, malformed).
    package private(set) var ignoredPackets = 0
    /// Queries built so far (data and polls).
    package private(set) var queriesBuilt = 0
    /// Packets KCP accepted from the server (what `bridges test` reports as the server answering).
    package private(set) var acceptedPackets = 0

    /// A session whose handshake starts at `now`: the first Noise message is queued on KCP.
    package init(serverPublicKey: [UInt8], domain: DnsName, mtu: Int, now: UInt32,
                 handshakeLimit: Duration = .seconds(60),
                 clientID: ClientID = .random(), conversation: UInt32 = UInt32.random(in: .min ... .max)) throws(DnsttError) {
        self.clientID = clientID
        self.domain = domain
        initiator = try DnsttNoise.initiator(serverPublicKey: serverPublicKey)
        var kcp = KCPControlBlock(conversation: conversation, mtu: mtu, window: Self.kcpWindow, interval: 10,
                                  maximumIncomingPayload: Self.maximumIncomingPayload, peer: Self.kcpPeer)
        kcp.send(try DnsttNoise.firstMessage(initiator))
        self.kcp = kcp
        schedule = DnsttPollSchedule(now: now)
        let seconds = handshakeLimit.components.seconds
        handshakeLimitMs = UInt32(clamping: max(0, seconds) * 1000 + handshakeLimit.components.attoseconds / 1_000_000_000_000_000)
        startedAt = now
        lastDownstream = now
        stalledSince = now
    }

    // MARK: receiving

    /// Handles one DNS message from the link; returns stream bytes for the reader (empty when
    /// none). Throws only what ends the session (see the top of this file).
    package mutating func receiveResponse(_ message: [UInt8], now: UInt32) throws(DnsttError) -> [UInt8] {
        let payload: [UInt8]
        do {
            payload = try DnsttWire.responsePayload(try DnsMessage(decoding: message), domain: domain)
        } catch {
            ignoredResponses += 1
            return []
        }
        let packets = DnsttWire.packets(in: payload)
        if !packets.isEmpty { schedule.responseCarriedPackets() }
        for packet in packets {
            do throws(TurboTunnelError) {
                try kcp.input(packet, now: now)
                lastDownstream = now
                acceptedPackets += 1
            } catch {
                ignoredPackets += 1
            }
        }
        return try deliver(now: now)
    }

    /// KCP's in-order bytes through Noise and smux. The Noise decoder is drained after every append.
    private mutating func deliver(now: UInt32) throws(DnsttError) -> [UInt8] {
        let bytes = kcp.receive()
        guard !bytes.isEmpty else { return [] }
        noiseFrames.append(bytes)
        var out: [UInt8] = []
        while let message = try noiseFrames.nextMessage() {
            guard let receiveCipher else {
                let states = try DnsttNoise.finish(initiator, message: message)
                sendCipher = states.send
                self.receiveCipher = states.receive
                phase = .opening
                // The SYN first, before any stream data: the server's smux accepts the stream.
                kcp.send(try DnsttNoise.seal(stream.openFrame.encoded, with: states.send))
                continue
            }
            smuxFrames.append(try DnsttNoise.open(message, with: receiveCipher))
            do throws(TurboTunnelError) {
                while let frame = try smuxFrames.nextFrame() {
                    out += try stream.receive(frame).data
                }
            } catch {
                throw DnsttError(turboTunnel: error)
            }
        }
        return out
    }

    // MARK: sending

    /// Queues stream bytes (sent as the peer's smux window allows).
    package mutating func write(_ bytes: [UInt8]) { stream.enqueue(bytes) }

    /// Half-closes the stream (smux FIN) once everything queued has been sent.
    package mutating func finish() { stream.finish() }

    /// The reader has taken `count` bytes: smux's window opens (an update goes out when due).
    package mutating func consume(_ count: Int) throws(DnsttError) {
        guard let sendCipher, let update = stream.consume(count) else { return }
        kcp.send(try DnsttNoise.seal(update.encoded, with: sendCipher))
    }

    /// Whether the server's KCP has acknowledged everything we queued (during the handshake: our
    /// Noise message arrived at the server's KCP, whatever its Noise layer made of it).
    package var everythingAcknowledged: Bool { !kcp.hasUnacknowledgedData && kcp.waitingToSend == 0 }

    /// Bytes accepted for the stream and not yet handed to KCP.
    package var backlog: Int { stream.backlog }

    /// Whether the caller should wait before writing more: KCP's queue is past its window.
    package var sendWindowFull: Bool { kcp.waitingToSend > Int(kcp.sendWindow) }

    /// One clock step (every 10 ms): smux frames into Noise into KCP, KCP's packets onto the send
    /// schedule, and the session's deadlines.
    package mutating func tick(now: UInt32) throws(DnsttError) {
        if let sendCipher {
            var plaintext: [UInt8] = []
            for frame in stream.outgoingFrames(now: now) { plaintext += frame.encoded }
            if !plaintext.isEmpty { kcp.send(try DnsttNoise.seal(plaintext, with: sendCipher)) }
        }
        for packet in kcp.flush(now: now) { schedule.enqueue(packet) }
        if phase == .opening && !kcp.hasUnacknowledgedData && kcp.waitingToSend == 0 { phase = .open }
        if phase != .open && timeDiff(now, startedAt) > Int32(clamping: handshakeLimitMs) {
            throw DnsttError(code: .handshakeTimeout, kind: .timeout,
                             message: phase == .handshaking
                                ? "the dnstt server's Noise handshake message did not arrive within \(handshakeLimitMs / 1000) s"
                                : "the dnstt server did not acknowledge the stream's opening within \(handshakeLimitMs / 1000) s")
        }
        if timeDiff(now, lastDownstream) > Int32(Self.silenceLimitMs) {
            throw DnsttError(code: .downstreamSilent, kind: .timeout,
                             message: "nothing came from the dnstt server for \(Self.silenceLimitMs / 1000) s")
        }
        let waiting = stream.backlog > 0 || kcp.waitingToSend > 0
        let progress = (acknowledged: kcp.sendUnacknowledged, sent: stream.sent)
        if !waiting || progress != lastProgress {
            stalledSince = now
            lastProgress = progress
        } else if timeDiff(now, stalledSince) > Int32(Self.sendStallLimitMs) {
            throw DnsttError(code: .sendStalled, kind: .timeout,
                             message: "nothing could be sent for \(Self.sendStallLimitMs / 1000) s: the dnstt server keeps its window shut or acknowledges nothing")
        }
        if kcp.deadLinkReached {
            throw DnsttError(code: .deadLink, kind: .timeout, message: "KCP gave up: a segment was sent 20 times without an ACK")
        }
    }

    /// The DNS queries due at `now` (wire format), per the poll schedule. Every query gets a fresh
    /// random ID and fresh random padding, so no resolver can answer one from its cache.
    package mutating func queries(now: UInt32) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var random = SystemRandomNumberGenerator()
        while let send = schedule.next(now: now) {
            let packet: [UInt8]?
            if case .data(let bytes) = send { packet = bytes } else { packet = nil }
            let padding = (0..<(packet == nil ? DnsttWire.pollPadding : DnsttWire.dataPadding)).map { _ in UInt8.random(in: 0...255, using: &random) }
            // A packet longer than a query can carry cannot come from our KCP (its MTU is the
            // domain's, below 224); it is dropped rather than trusted.
            guard let payload = try? DnsttWire.queryPayload(clientID: clientID, padding: padding, packet: packet),
                  let name = try? DnsttWire.queryName(payload: payload, domain: domain) else { continue }
            out.append(DnsttWire.queryMessage(id: UInt16.random(in: 0...UInt16.max, using: &random), name: name).encoded)
            queriesBuilt += 1
        }
        return out
    }
}
