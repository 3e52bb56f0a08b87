import Synchronization
import TransportWire
import TurboTunnel

// One snowflake client session: the tor byte stream as one smux v2 stream, over one KCP
// conversation, over Turbo Tunnel encapsulation on a carrier (a DataChannel; in tests a WebSocket
// straight to the server). Every carrier starts with the token and the ClientID.
//
// Redial, as the reference client: when the carrier fails, closes, or has been silent for 20 s,
// the session dials a new one and sends the same ClientID; the KCP conversation and the smux
// stream carry on (KCP retransmits what was lost). The server keeps a ClientID's packets for a
// minute, so the session gives up when it has had no carrier for 60 s.
//
// Two differences from the reference client, both to make a lost proxy cost seconds rather than
// tens of seconds: a carrier is also dropped after 8 s of silence while KCP has unacknowledged
// data in flight (a live path acknowledges within a few RTOs), and on a new carrier everything
// in flight is retransmitted at once instead of after the RTO that doubled during the outage.
//
// Spares (`max=` > 1): like the reference client's pool, the session keeps up to max − 1 further
// carriers ready (rendezvous done, data channel open, nothing sent on them yet) and takes one
// when the current carrier is lost, without a rendezvous. Only one carrier is used at a time. An
// idle spare is dropped after 20 s (the reference client's staleness; a 2.5.1 proxy closes an
// idle channel after 30 s) and another one collected.

/// A running session. `incoming` yields the bytes of the smux stream and finishes when the peer
/// sends FIN, or with an error when no carrier could be had for `redialLimit`.
public actor SnowflakeSession {
    public nonisolated let clientID: ClientID
    public nonisolated let conversation: UInt32
    public nonisolated let incoming: AsyncThrowingStream<[UInt8], any Error>

    private let continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation
    private var kcp: KCPControlBlock
    private var stream = SmuxStreamState(peer: SnowflakeSession.smuxPeer)
    private var encapsulation = Encapsulation.Decoder()
    private var frames = SmuxFrame.Decoder(peer: SnowflakeSession.smuxPeer)
    private var carrier: (any ByteStream)?
    private var dialer: (@Sendable () async throws -> any ByteStream)?
    private var lastInbound: UInt32 = 0
    /// Since when KCP has had unacknowledged data (nil: none in flight).
    private var inFlightSince: UInt32?
    /// Carriers used so far (1 + redials).
    public private(set) var carriersUsed = 0
    /// Carriers taken from the spares (failovers without a rendezvous).
    public private(set) var sparesUsed = 0
    /// Ready spare carriers, with the time each was collected.
    private var spares: [(stream: any ByteStream, since: UInt32)] = []
    private var sparesWanted = 0
    /// How many spares are ready now.
    public var spareCount: Int { spares.count }

    /// Silence after which the carrier is dropped (the reference client's staleness timeout).
    static let stalenessMs: UInt32 = 20_000
    /// Silence after which the carrier is dropped while KCP has data in flight.
    static let inFlightSilenceMs: UInt32 = 8_000
    /// Age after which an unused spare is replaced.
    static let spareLifetimeMs: UInt32 = 20_000
    /// How long the session waits for a new carrier before it gives up.
    public static let defaultRedialLimit: Duration = .seconds(60)
    /// How long data may wait to be sent without any progress (nothing acknowledged, no smux
    /// window opening) before the session ends: a peer that keeps its KCP or smux window shut
    /// while answering everything else would otherwise hold tor's writes forever.
    static let sendStallLimitMs: UInt32 = 60_000
    /// Since when data has waited without progress, and the progress seen then.
    private var stalledSince: UInt32 = 0
    private var lastProgress: (acknowledged: UInt32, sent: UInt32) = (0, 0)
    private var tasks: [Task<Void, Never>] = []
    private let clock = ContinuousClock()
    private let epoch: ContinuousClock.Instant
    private var ended = false

    /// How the shared KCP and smux code names the peer in its errors (the wording of snowflake's
    /// log lines before that code moved to TurboTunnel; SnowflakeHostilePeerTests waits for it).
    static let kcpPeer = "the snowflake proxy or server"
    static let smuxPeer = "the snowflake server (or the proxy in between)"

    /// Largest carrier write: one data-channel message (WebRTCDataChannel splits larger writes).
    static let carrierWriteLimit = 16 * 1024

    /// Largest backlog (bytes) `write` lets pile up before it waits for the windows to open.
    static let writeBacklogLimit = 1 << 20

    public init(clientID: ClientID = .random(), conversation: UInt32 = UInt32.random(in: .min ... .max)) {
        self.clientID = clientID
        self.conversation = conversation
        var kcp = KCPControlBlock(conversation: conversation, peer: Self.kcpPeer)
        // The smux SYN goes first, before anything written to the stream, whenever the first
        // carrier comes: the stream can be written to before the session has a carrier.
        kcp.send(SmuxStreamState().openFrame.encoded)
        self.kcp = kcp
        self.epoch = clock.now
        (incoming, continuation) = AsyncThrowingStream.makeStream()
    }

    private var now: UInt32 {
        let elapsed = clock.now - epoch
        let ms = elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
        return UInt32(truncatingIfNeeded: ms)
    }

    /// Starts the session on one carrier only: when it ends, the session ends.
    public func start(carrier: any ByteStream) async throws(SnowflakeError) {
        let once = Mutex<(any ByteStream)?>(carrier)
        do {
            try await start(dialer: {
                guard let next = once.withLock({ c -> (any ByteStream)? in defer { c = nil }; return c }) else {
                    throw SnowflakeError(code: .closed, kind: .network, message: "the only carrier has closed")
                }
                return next
            }, redialLimit: .zero)
        } catch let error as SnowflakeError {
            throw error
        } catch {
            throw SnowflakeError(code: .connection, kind: .network, message: "\(error)")
        }
    }

    private var redialLimit: Duration = SnowflakeSession.defaultRedialLimit

    /// Starts the session: dials the first carrier (its failure is thrown), sends the preamble and
    /// the smux SYN, then runs the 10 ms KCP clock and the carrier reader, redialling through
    /// `dialer` whenever the carrier is lost. With `spares` > 0 it also keeps that many further
    /// carriers ready through `dialer`.
    public func start(dialer: @escaping @Sendable () async throws -> any ByteStream,
                      redialLimit: Duration = SnowflakeSession.defaultRedialLimit, spares: Int = 0) async throws {
        self.dialer = dialer
        self.redialLimit = redialLimit
        self.sparesWanted = max(0, spares)
        let first = try await dialer()
        guard !ended else {
            first.close()
            throw SnowflakeError(code: .closed, kind: .network, message: "the snowflake session was closed while it dialled")
        }
        try await attach(first)
        try await flush()
        tasks.append(Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(10))
                guard let self, await self.tick() else { return }
            }
        })
        tasks.append(Task { [weak self] in
            while !Task.isCancelled {
                guard let self, let carrier = await self.currentCarrier() else { return }
                do {
                    let bytes = try await carrier.read(maximumCount: 64 * 1024)
                    if bytes.isEmpty {
                        throw SnowflakeError(code: .closed, kind: .network, message: "the carrier closed")
                    }
                    try await self.received(bytes)
                } catch {
                    guard await self.redial(after: error, from: carrier) else { return }
                }
            }
        })
        if sparesWanted > 0 {
            tasks.append(Task { [weak self] in
                while !Task.isCancelled {
                    guard let self, let missing = await self.spareShortfall() else { return }
                    guard missing > 0 else {
                        try? await Task.sleep(for: .milliseconds(500))
                        continue
                    }
                    do {
                        await self.addSpare(try await dialer())
                    } catch {
                        try? await Task.sleep(for: .seconds(2))
                    }
                }
            })
        }
    }

    /// How many spares to collect (stale ones are dropped first); nil once the session has ended.
    private func spareShortfall() -> Int? {
        guard !ended else { return nil }
        let time = now
        spares.removeAll { spare in
            guard timeDiff(time, spare.since) > Int32(Self.spareLifetimeMs) else { return false }
            spare.stream.close()
            return true
        }
        return sparesWanted - spares.count
    }

    private func addSpare(_ stream: any ByteStream) {
        guard !ended else {
            stream.close()
            return
        }
        spares.append((stream, now))
    }

    private func currentCarrier() -> (any ByteStream)? { ended ? nil : carrier }

    /// A new carrier: preamble first, and a fresh decoder (chunks never span carriers). On a
    /// replacement, whatever was in flight goes out again at once.
    private func attach(_ next: any ByteStream) async throws(SnowflakeError) {
        do {
            try await next.write(clientID.carrierPreamble)
        } catch {
            throw SnowflakeError(streamFailure: error)
        }
        carrier = next
        carriersUsed += 1
        encapsulation = Encapsulation.Decoder()
        lastInbound = now
        if carriersUsed > 1 { kcp.retransmitEverythingNow(now: now) }
    }

    /// Drops the current carrier (as when its proxy goes away); the session redials.
    public func abandonCarrier() {
        carrier?.close()
    }

    /// Replaces a failed carrier; false when the session has ended.
    private func redial(after error: any Error, from failed: any ByteStream) async -> Bool {
        failed.close()
        guard !ended else { return false }
        if let current = carrier, current as AnyObject !== failed as AnyObject { return true }  // already replaced
        carrier = nil
        // A ready spare first: no rendezvous, no wait. The freshest is the likeliest to be alive.
        while let spare = spares.popLast() {
            do {
                try await attach(spare.stream)
                sparesUsed += 1
                try? await flush()
                return true
            } catch {
                spare.stream.close()
            }
        }
        let deadline = ContinuousClock.now + redialLimit
        var lastError = error
        while !ended, let dialer {
            do {
                try await attach(try await dialer())
                try? await flush()
                return true
            } catch {
                lastError = error
            }
            guard ContinuousClock.now < deadline else { break }
            try? await Task.sleep(for: .seconds(1))
        }
        end(lastError)
        return false
    }

    /// Queues bytes on the stream; waits while more than `writeBacklogLimit` bytes are unsent.
    public func write(_ bytes: [UInt8]) async throws(SnowflakeError) {
        while !ended && (stream.backlog > Self.writeBacklogLimit || kcp.waitingToSend > Int(kcp.sendWindow)) {
            try? await Task.sleep(for: .milliseconds(10))
        }
        guard !ended else {
            throw SnowflakeError(code: .closed, kind: .network, message: "the snowflake session has ended")
        }
        stream.enqueue(bytes)
        try await flush()
    }

    /// Half-closes the stream (smux FIN) once everything queued has been sent.
    public func finish() async throws(SnowflakeError) {
        stream.finish()
        try await flush()
    }

    /// Stops everything and closes the carrier.
    public func close() {
        end(nil)
    }

    /// Ends the session with `error` (readers of `incoming` get it), e.g. when its first dial failed.
    public func fail(_ error: any Error) {
        end(error)
    }

    private func end(_ error: (any Error)?) {
        guard !ended else { return }
        ended = true
        for task in tasks { task.cancel() }
        carrier?.close()
        for spare in spares { spare.stream.close() }
        spares.removeAll()
        continuation.finish(throwing: error)
    }

    /// One clock tick: keepalives, windows, retransmissions. False once the session has ended.
    private func tick() async -> Bool {
        guard !ended else { return false }
        do {
            try await flush()
        } catch {
            end(error)
        }
        // Silence only counts against a carrier while data is waiting for an answer: an idle
        // session hears the server's keepalive only every 10 s.
        if kcp.hasUnacknowledgedData {
            if inFlightSince == nil { inFlightSince = now }
        } else {
            inFlightSince = nil
        }
        if let carrier {
            let silence = timeDiff(now, lastInbound)
            let unanswered = inFlightSince.map { min(silence, timeDiff(now, $0)) } ?? 0
            if silence > Int32(Self.stalenessMs) || unanswered > Int32(Self.inFlightSilenceMs) {
                carrier.close()  // the reader sees it end and redials
            }
        }
        let waiting = stream.backlog > 0 || kcp.waitingToSend > 0
        let progress = (acknowledged: kcp.sendUnacknowledged, sent: stream.sent)
        if !waiting || progress != lastProgress {
            stalledSince = now
            lastProgress = progress
        } else if timeDiff(now, stalledSince) > Int32(Self.sendStallLimitMs) {
            end(SnowflakeError(code: .timeout, kind: .network,
                               message: "nothing could be sent for \(Self.sendStallLimitMs / 1000) s: the snowflake proxy or server keeps its window shut or acknowledges nothing"))
        }
        if kcp.deadLinkReached {
            end(SnowflakeError(code: .timeout, kind: .network, message: "KCP gave up: a segment was sent 20 times without an ACK"))
        }
        return !ended
    }

    private func flush() async throws(SnowflakeError) {
        let time = now
        for frame in stream.outgoingFrames(now: time) { kcp.send(frame.encoded) }
        // Without a carrier nothing is sent: KCP keeps it all until one comes.
        guard let carrier else { return }
        let packets = kcp.flush(now: time)
        guard !packets.isEmpty else { return }
        // Whole encapsulated packets per write, at most one data-channel message each: flushes
        // interleave (the actor is re-entered while a write waits for SCTP buffer space), and a
        // write split into several messages could then be interleaved mid-packet, corrupting the
        // byte stream the server decodes. Whole messages may interleave: KCP does not mind order.
        var chunks: [[UInt8]] = []
        var chunk: [UInt8] = []
        for packet in packets {
            let encoded = try Encapsulation.encodeData(packet)
            if !chunk.isEmpty && chunk.count + encoded.count > Self.carrierWriteLimit {
                chunks.append(chunk)
                chunk = []
            }
            chunk += encoded
        }
        if !chunk.isEmpty { chunks.append(chunk) }
        for chunk in chunks {
            do {
                try await carrier.write(chunk)
            } catch {
                // A failing carrier is replaced, not fatal: the reader sees it closed and
                // redials, and KCP sends these packets again on the next one.
                carrier.close()
                return
            }
        }
    }

    private func received(_ bytes: [UInt8]) async throws(SnowflakeError) {
        guard !ended else { return }
        lastInbound = now
        encapsulation.append(bytes)
        while let packet = try encapsulation.nextPacket() {
            do throws(TurboTunnelError) {
                try kcp.input(packet, now: now)
            } catch {
                throw SnowflakeError(turboTunnel: error)
            }
        }
        let data = kcp.receive()
        guard !data.isEmpty else { return }
        frames.append(data)
        // An smux violation corrupts the one byte stream for good: a new carrier cannot help, so
        // the session ends (KCP and encapsulation errors above only cost the carrier).
        do throws(TurboTunnelError) {
            while let frame = try frames.nextFrame() {
                let (payload, _) = try stream.receive(frame)
                if !payload.isEmpty { continuation.yield(payload) }
                if stream.peerFinished {
                    continuation.finish()
                }
            }
        } catch {
            end(SnowflakeError(turboTunnel: error))
        }
    }

    /// The reader of `incoming` has taken `count` more bytes: smux's window opens by that much
    /// (a window update goes out when one is due). Until then the server may send at most
    /// SmuxStreamState.streamBuffer bytes ahead of the reader, so a slow tor holds memory bounded
    /// by that, not by what the server would like to send.
    public func acknowledgeRead(_ count: Int) async {
        guard !ended, let update = stream.consume(count) else { return }
        kcp.send(update.encoded)
        try? await flush()
    }

    /// Stream bytes received and not yet acknowledged as read.
    public var unreadStreamBytes: Int { Int(stream.unread) }
}
