// One dnstt client session on a resolver link (docs/plans/DNSTT.md §2): DnsttSessionCore's
// protocol state driven by a 10 ms clock, a reader task on the link, and the caller's stream.
//
// `open()` returns once the Noise handshake is done and KCP has acknowledged the smux SYN, so a
// SOCKS success follows the handshake as in the reference PT client; it throws when that does not
// happen within the handshake deadline. Afterwards the session ends on the core's deadlines (2 min
// without KCP data from the server, 60 s send stall, KCP's dead link), on what only an
// authenticated peer can break (Noise, smux), when the link closes, or on `close()`. Every wait on
// the server has a deadline: the handshake's, then the silence limit (the server sends a NOP every
// 10 s, and our polls keep asking for it).
//
// Queries go out as the poll schedule says, straight after each step that may have produced some
// (a tick, a response, a write), so a KCP packet waits for no timer.

/// A running dnstt session. `incoming` yields the stream's bytes and finishes when the server
/// sends FIN, or with a ``DnsttError`` when the session fails.
package actor DnsttSession {
    package nonisolated let incoming: AsyncThrowingStream<[UInt8], any Error>
    private let continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation
    private var core: DnsttSessionCore
    private let link: any ResolverLink
    private var tasks: [Task<Void, Never>] = []
    private let clock = ContinuousClock()
    private let epoch: ContinuousClock.Instant
    private var ended = false
    private var failure: DnsttError?
    /// Told each stage once, when it is first seen (`postern bridges test` reports them).
    private let stageReached: @Sendable (DnsttTransport.Stage) -> Void
    private var reported: Set<DnsttTransport.Stage> = []
    private var anyMessage = false
    /// Largest backlog (bytes) `write` lets pile up before it waits for the windows to open.
    static let writeBacklogLimit = 1 << 20

    /// A session over `link` to the server with `serverPublicKey` under `domain` (KCP MTU `mtu`,
    /// from ``DnsttWire/mtu(domain:)``). Nothing is sent before `open()`.
    package init(link: any ResolverLink, serverPublicKey: [UInt8], domain: DnsName, mtu: Int,
                 handshakeTimeout: Duration = .seconds(60),
                 stageReached: @escaping @Sendable (DnsttTransport.Stage) -> Void = { _ in }) throws(DnsttError) {
        self.link = link
        self.stageReached = stageReached
        epoch = clock.now
        core = try DnsttSessionCore(serverPublicKey: serverPublicKey, domain: domain, mtu: mtu, now: 0,
                                    handshakeLimit: handshakeTimeout)
        (incoming, continuation) = AsyncThrowingStream.makeStream()
    }

    private var now: UInt32 {
        let elapsed = clock.now - epoch
        let ms = elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
        return UInt32(truncatingIfNeeded: ms)
    }

    /// Starts the session and waits until the stream is open (see the top of this file).
    package func open() async throws(DnsttError) {
        guard tasks.isEmpty, !ended else { throw DnsttError(code: .closed, kind: .network, message: "the dnstt session was already started") }
        let link = link
        tasks.append(Task { [weak self] in
            while !Task.isCancelled {
                let message: [UInt8]?
                do {
                    message = try await link.receive()
                } catch {
                    await self?.end(error)
                    return
                }
                guard let self else { return }
                guard let message else {
                    await self.end(DnsttError(code: .closed, kind: .network, message: "the resolver link closed"))
                    return
                }
                guard await self.received(message) else { return }
            }
        })
        tasks.append(Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(10))
                guard let self, await self.step() else { return }
            }
        })
        await step()
        // The deadline is the core's (handshakeTimeout, checked every tick); this loop only watches.
        while !ended && core.phase != .open {
            if Task.isCancelled {
                end(DnsttError(code: .closed, kind: .network, message: "the dnstt dial was cancelled"))
                break
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
        if ended {
            throw failure ?? DnsttError(code: .closed, kind: .network, message: "the dnstt session was closed while it opened")
        }
    }

    /// Whether the stream is open (the handshake done and the SYN acknowledged).
    package var isOpen: Bool { !ended && core.phase == .open }

    /// Queues bytes on the stream; waits while more than `writeBacklogLimit` bytes are unsent.
    package func write(_ bytes: [UInt8]) async throws(DnsttError) {
        while !ended && (core.backlog > Self.writeBacklogLimit || core.sendWindowFull) {
            try? await Task.sleep(for: .milliseconds(10))
        }
        guard !ended else { throw failure ?? DnsttError(code: .closed, kind: .network, message: "the dnstt session has ended") }
        core.write(bytes)
        await step()
    }

    /// Half-closes the stream (smux FIN) once everything queued has been sent.
    package func finish() async {
        core.finish()
        await step()
    }

    /// The reader of `incoming` has taken `count` more bytes: smux's window opens by that much, so
    /// a slow reader holds at most smux's 1 MiB window.
    package func acknowledgeRead(_ count: Int) async {
        guard !ended else { return }
        do {
            try core.consume(count)
        } catch {
            end(error)
        }
        await step()
    }

    /// Stops everything and closes the link.
    package func close() async {
        end(nil)
        await link.close()
    }

    /// What the session has counted so far (tests and status).
    package var statistics: (ignoredResponses: Int, ignoredPackets: Int, queries: Int, droppedPackets: Int) {
        (core.ignoredResponses, core.ignoredPackets, core.queriesBuilt, core.schedule.droppedPackets)
    }

    private func end(_ error: (any Error)?) {
        guard !ended else { return }
        ended = true
        for task in tasks { task.cancel() }
        let failure: DnsttError? = error.map { error in
            if let error = error as? DnsttError { return error }
            return DnsttError(code: .linkFailed, kind: .network, message: "the resolver link failed (\(type(of: error)))")
        }
        self.failure = failure
        continuation.finish(throwing: failure)
        let link = link
        Task { await link.close() }
    }

    /// Tells `stageReached` of the stages first seen since the last call.
    private func reportStages() {
        var seen: [DnsttTransport.Stage] = []
        if anyMessage { seen.append(.answered) }
        if core.acceptedPackets > 0 { seen.append(.server) }
        if core.acceptedPackets > 0 && (core.phase != .handshaking || core.everythingAcknowledged) { seen.append(.acknowledged) }
        if core.phase != .handshaking { seen.append(.noise) }
        if core.phase == .open { seen.append(.open) }
        for stage in seen where !reported.contains(stage) {
            reported.insert(stage)
            stageReached(stage)
        }
    }

    /// One clock step and the queries it makes due. False once the session has ended.
    @discardableResult
    private func step() async -> Bool {
        guard !ended else { return false }
        let time = now
        do {
            try core.tick(now: time)
        } catch {
            end(error)
            return false
        }
        reportStages()
        await send(core.queries(now: time))
        return !ended
    }

    private func send(_ queries: [[UInt8]]) async {
        for query in queries {
            do {
                try await link.send(query)
            } catch {
                // One query lost (the resolver unreachable for a moment, a full buffer): KCP
                // retransmits, and the silence limit ends a session whose link never recovers.
                continue
            }
        }
    }

    /// One message from the link. False once the session has ended.
    private func received(_ message: [UInt8]) async -> Bool {
        guard !ended else { return false }
        anyMessage = true
        let data: [UInt8]
        do {
            data = try core.receiveResponse(message, now: now)
        } catch {
            end(error)
            return false
        }
        if !data.isEmpty { continuation.yield(data) }
        if core.stream.peerFinished { continuation.finish() }
        return await step()
    }
}
