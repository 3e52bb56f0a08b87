import Synchronization
import TransportBase
import TransportTLS
import TransportWire

/// DNS over TLS to a recursive resolver (RFC 7858; docs/plans/DNSTT.md §2, dnstt notes §4): one TLS
/// connection at a time, queries pipelined on it as `[u16 BE length][message]` (prefix and message in
/// one write), responses taken in whatever order they come.
///
/// Resolvers close idle or busy DoT connections (the notes' §8.7: Google's closed every ~200 KB), so
/// when the connection ends the link dials again after 1 s, doubling the wait after every failed
/// dial up to 10 s, until `close()`: the session's own silence limit decides when the resolver is
/// gone for good (the reference gives up after one failed redial). Queries sent meanwhile wait in
/// the outgoing queue (capped; the newest are dropped when full).
///
/// Deadlines: lookup and TCP connect 30 s, TLS 20 s (``ResolverTLSDialer``), each write 30 s (a
/// resolver that stops reading gets the connection closed and redialled). A read has none: a quiet
/// resolver is normal between polls, and the session ends the link when nothing useful comes.
package final class DoTLink: ResolverLink {
    static let firstRedialDelay: Duration = .seconds(1)
    static let maximumRedialDelay: Duration = .seconds(10)
    static let writeTimeout: Duration = .seconds(30)
    /// Queries waiting for the connection: the session's own queue cap (§2), so a redial loses at
    /// most what the session would have dropped anyway.
    static let outgoingCapacity = 128
    /// Responses waiting for `receive()`, in number and bytes.
    static let incomingCapacity = 256
    static let incomingByteLimit = 1 << 20
    static let readChunk = 16_384

    private let dialer: ResolverTLSDialer
    private let outgoing = ResolverMessageQueue(capacity: DoTLink.outgoingCapacity, byteLimit: DoTLink.outgoingCapacity * 65_535)
    private let incoming = ResolverMessageQueue(capacity: DoTLink.incomingCapacity, byteLimit: DoTLink.incomingByteLimit)
    private let state = Mutex(State())

    private struct State {
        var closed = false
        var supervisor: Task<Void, Never>?
        var stream: BrowserTLSStream?
        var connections = 0
    }

    private init(dialer: ResolverTLSDialer) {
        self.dialer = dialer
    }

    /// Dials the resolver at `host:port` (a name, resolved by the system's lookup, or an IP literal)
    /// through `dialer`, and returns the link once TLS is up; later connections are dialled by the
    /// link itself. `caFile` adds trusted CAs to the system's (the test bed's). ALPN: none, as the
    /// reference's DoT hello (no browser speaks DoT, so there is no browser's list to copy).
    /// Throws `resolver-lookup-failed`, `resolver-connect-failed` or `resolver-tls-failed`.
    package static func connect(host: String, port: UInt16, dialer: OutboundDialer, caFile: String? = nil,
                                profile: BrowserTLSProfile = .firefoxESR) async throws(DnsttError) -> DoTLink {
        let tlsDialer = ResolverTLSDialer(host: host, port: port, dialer: dialer, applicationProtocols: [],
                                          caFile: caFile, profile: profile)
        let stream = try await tlsDialer.connect()
        let link = DoTLink(dialer: tlsDialer)
        link.start(first: stream)
        return link
    }

    /// TLS connections made so far (the first included): how a test sees a redial.
    package var connectionCount: Int { state.withLock { $0.connections } }

    package func send(_ query: [UInt8]) async throws(DnsttError) {
        guard !state.withLock({ $0.closed }) else {
            throw DnsttError(code: .resolverLinkClosed, kind: .usage, message: "the DoT link is closed")
        }
        guard query.count <= Int(UInt16.max) else {
            throw DnsttError(code: .queryTooLong, kind: .invalidInput, message: "a DNS message longer than 65535 bytes cannot be framed for DoT")
        }
        outgoing.push(query)
    }

    package func receive() async throws(DnsttError) -> [UInt8]? {
        await incoming.next()
    }

    package func close() async {
        let (supervisor, stream) = state.withLock { state -> (Task<Void, Never>?, BrowserTLSStream?) in
            state.closed = true
            defer { state.supervisor = nil; state.stream = nil }
            return (state.supervisor, state.stream)
        }
        supervisor?.cancel()
        stream?.close()
        outgoing.close()
        incoming.close()
    }

    private func start(first: BrowserTLSStream) {
        let task = Task { [self] in await supervise(first: first) }
        let closed = state.withLock { state -> Bool in
            state.connections = 1
            if !state.closed { state.supervisor = task }
            return state.closed
        }
        if closed {
            task.cancel()
            first.close()
        }
    }

    /// Serves one connection at a time and dials the next when it ends, until cancelled.
    private func supervise(first: BrowserTLSStream) async {
        var stream: BrowserTLSStream? = first
        var delay = Self.firstRedialDelay
        while !Task.isCancelled {
            if let current = stream {
                guard adopt(current) else { current.close(); return }
                await serve(current)
                current.close()
                state.withLock { if $0.stream === current { $0.stream = nil } }
                stream = nil
            }
            guard (try? await Task.sleep(for: delay)) != nil else { return }
            do {
                stream = try await dialer.connect()
                state.withLock { $0.connections += 1 }
                delay = Self.firstRedialDelay
            } catch {
                delay = min(delay * 2, Self.maximumRedialDelay)
            }
        }
        stream?.close()
    }

    /// Makes `stream` the one `close()` closes; false when the link closed meanwhile.
    private func adopt(_ stream: BrowserTLSStream) -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            state.stream = stream
            return true
        }
    }

    /// Runs the writer and the reader of one connection until either ends (the server closed, a
    /// read or write failed, a write timed out) or the link is closed.
    private func serve(_ stream: BrowserTLSStream) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.writeQueries(to: stream) }
            group.addTask { await self.readResponses(from: stream) }
            _ = await group.next()
            stream.close()
            group.cancelAll()
        }
    }

    private func writeQueries(to stream: BrowserTLSStream) async {
        while let query = await outgoing.next() {
            guard let frame = try? DoTFrameDecoder.frame(query) else { continue }
            do {
                try await withDeadline(Self.writeTimeout, expired: { stream.close() }) {
                    try await stream.write(frame)
                }
            } catch {
                return
            }
        }
    }

    private func readResponses(from stream: BrowserTLSStream) async {
        var decoder = DoTFrameDecoder()
        while !Task.isCancelled {
            guard let bytes = try? await stream.read(maximumCount: Self.readChunk), !bytes.isEmpty else { return }
            for message in decoder.append(bytes) { incoming.push(message) }
        }
    }
}
