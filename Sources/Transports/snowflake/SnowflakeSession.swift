// One snowflake client session: the tor byte stream as one smux v2 stream, over one KCP
// conversation, over Turbo Tunnel encapsulation on a carrier (a DataChannel; in tests a WebSocket
// straight to the server). The carrier starts with the token and the ClientID. Redial (moving the
// same ClientID and KCP conversation to a new carrier) is not implemented yet: when the carrier
// ends, the session ends.

/// A running session. `incoming` yields the bytes of the smux stream and finishes when the peer
/// sends FIN or the carrier ends (with an error in the latter case).
public actor SnowflakeSession {
    public nonisolated let clientID: ClientID
    public nonisolated let conversation: UInt32
    public nonisolated let incoming: AsyncThrowingStream<[UInt8], any Error>

    private let continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation
    private var kcp: KCPControlBlock
    private var stream = SmuxStreamState()
    private var encapsulation = Encapsulation.Decoder()
    private var frames = SmuxFrame.Decoder()
    private var carrier: (any SnowflakeByteStream)?
    private var tasks: [Task<Void, Never>] = []
    private let clock = ContinuousClock()
    private let epoch: ContinuousClock.Instant
    private var ended = false

    /// Largest backlog (bytes) `write` lets pile up before it waits for the windows to open.
    static let writeBacklogLimit = 1 << 20

    public init(clientID: ClientID = .random(), conversation: UInt32 = UInt32.random(in: .min ... .max)) {
        self.clientID = clientID
        self.conversation = conversation
        self.kcp = KCPControlBlock(conversation: conversation)
        self.epoch = clock.now
        (incoming, continuation) = AsyncThrowingStream.makeStream()
    }

    private var now: UInt32 {
        let elapsed = clock.now - epoch
        let ms = elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
        return UInt32(truncatingIfNeeded: ms)
    }

    /// Starts the session on `carrier`: preamble, the smux SYN, then the 10 ms KCP clock and the
    /// carrier reader.
    public func start(carrier: any SnowflakeByteStream) async throws(SnowflakeError) {
        self.carrier = carrier
        try await carrier.write(clientID.carrierPreamble)
        kcp.send(stream.openFrame.encoded)
        try await flush()
        tasks.append(Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(10))
                guard let self, await self.tick() else { return }
            }
        })
        tasks.append(Task { [weak self] in
            while !Task.isCancelled {
                do {
                    let bytes = try await carrier.read(maxLength: 64 * 1024)
                    guard let self else { return }
                    if bytes.isEmpty {
                        await self.end(SnowflakeError(code: .closed, kind: .network, message: "the carrier closed"))
                        return
                    }
                    try await self.received(bytes)
                } catch {
                    await self?.end(error)
                    return
                }
            }
        })
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

    private func end(_ error: (any Error)?) {
        guard !ended else { return }
        ended = true
        for task in tasks { task.cancel() }
        carrier?.close()
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
        if kcp.deadLinkReached {
            end(SnowflakeError(code: .timeout, kind: .network, message: "KCP gave up: a segment was sent 20 times without an ACK"))
        }
        return !ended
    }

    private func flush() async throws(SnowflakeError) {
        let time = now
        for frame in stream.outgoingFrames(now: time) { kcp.send(frame.encoded) }
        let packets = kcp.flush(now: time)
        guard !packets.isEmpty, let carrier else { return }
        var chunk: [UInt8] = []
        for packet in packets { chunk += try Encapsulation.encodeData(packet) }
        try await carrier.write(chunk)
    }

    private func received(_ bytes: [UInt8]) async throws(SnowflakeError) {
        encapsulation.append(bytes)
        while let packet = try encapsulation.nextPacket() {
            try kcp.input(packet, now: now)
        }
        let data = kcp.receive()
        guard !data.isEmpty else { return }
        frames.append(data)
        var repliesQueued = false
        while let frame = try frames.nextFrame() {
            let (payload, replies) = stream.receive(frame)
            if !payload.isEmpty { continuation.yield(payload) }
            for reply in replies {
                kcp.send(reply.encoded)
                repliesQueued = true
            }
            if stream.peerFinished {
                continuation.finish()
            }
        }
        if repliesQueued { try await flush() }
    }
}
