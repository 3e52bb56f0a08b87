import Foundation
import Synchronization
import TransportBase
import TransportTLS
import TransportWire

/// DNS over HTTPS to a recursive resolver (RFC 8484; docs/plans/DNSTT.md §2, dnstt notes §4): one
/// POST per query to the exact URL, `content-type` and `accept` both `application/dns-message`, no
/// user-agent. The TLS hello is Firefox ESR's, whose ALPN offers h2 and http/1.1: when the server
/// picks h2 (unbound's DoH requires it) the queries go as concurrent streams of one HTTP/2
/// connection (TransportWire's HTTP2Connection), otherwise over at most 4 keep-alive HTTP/1.1
/// connections, one request at a time each. Later connections must pick what the first did (as
/// the reference requires), else they are closed.
///
/// Answers: status 200 with `content-type` exactly `application/dns-message` and a body of at most
/// 64000 bytes is a response; anything else is dropped. Any other status stops sending until its
/// `Retry-After` (``RetryAfter``: seconds or HTTP-date, 10 s when absent, at most 120 s), and the
/// queries queued meanwhile are dropped, as the reference does (KCP retransmits).
///
/// Limits: at most 32 requests in flight (the reference's 32 senders), each with a 60 s deadline
/// (the reference's http.Client timeout); lookup and connect 30 s, TLS 20 s (``ResolverTLSDialer``);
/// a failed dial waits 1 s, doubling to 10 s, before the next (queries meanwhile are dropped).
package final class DoHLink: ResolverLink {
    static let maximumInFlight = 32
    static let http1Connections = 4
    static let requestTimeout: Duration = .seconds(60)
    /// The largest answer body (the reference's 64000).
    package static let bodyLimit = 64_000
    static let firstRedialDelay: Duration = .seconds(1)
    static let maximumRedialDelay: Duration = .seconds(10)
    package static let mediaType = "application/dns-message"
    static let outgoingCapacity = 128
    static let incomingCapacity = 256
    static let incomingByteLimit = 1 << 20
    static let readChunk = 16_384

    /// The HTTP version the first connection settled.
    package enum Version: Sendable, Equatable {
        case http2
        case http11
    }

    package let version: Version
    private let url: DoHURL
    private let dialer: ResolverTLSDialer
    private let outgoing = ResolverMessageQueue(capacity: DoHLink.outgoingCapacity, byteLimit: DoHLink.outgoingCapacity * 65_535)
    private let incoming = ResolverMessageQueue(capacity: DoHLink.incomingCapacity, byteLimit: DoHLink.incomingByteLimit)
    private let state = Mutex(State())

    private enum Shared: Sendable {
        case connected(HTTP2Connection)
        case dialing(Task<HTTP2Connection?, Never>)
        case idle
    }

    private struct State {
        var closed = false
        var workers: [Task<Void, Never>] = []
        var pausedUntil: ContinuousClock.Instant?
        var http2: Shared = .idle
        var http1Streams: [ObjectIdentifier: BrowserTLSStream] = [:]
        var dialNotBefore: ContinuousClock.Instant?
        var redialDelay = DoHLink.firstRedialDelay
        var connections = 0
        var pauses = 0
        var dropped = 0
    }

    private init(url: DoHURL, dialer: ResolverTLSDialer, version: Version) {
        self.url = url
        self.dialer = dialer
        self.version = version
    }

    /// Dials the resolver of `url` (an https URL: a name, resolved by the system's lookup, or an
    /// IP literal) through `dialer` and returns the link once TLS (and for h2 the connection
    /// preface) is done. `caFile` adds trusted CAs to the system's (the test bed's). Throws
    /// `doh-url-unusable`, `resolver-lookup-failed`, `resolver-connect-failed` or `resolver-tls-failed`.
    package static func connect(url text: String, dialer: OutboundDialer, caFile: String? = nil,
                                profile: BrowserTLSProfile = .firefoxESR) async throws(DnsttError) -> DoHLink {
        let url = try DoHURL(parsing: text)
        let tlsDialer = ResolverTLSDialer(host: url.host, port: url.port, dialer: dialer, applicationProtocols: ["h2", "http/1.1"],
                                          caFile: caFile, profile: profile)
        let stream = try await tlsDialer.connect()
        if stream.applicationProtocol == "h2" {
            let connection: HTTP2Connection
            do {
                connection = try await HTTP2Connection.open(over: stream)
            } catch {
                stream.close()
                throw DnsttError(code: .resolverConnectFailed, kind: .network, message: "opening HTTP/2 with the resolver failed (\(error.code.rawValue))")
            }
            let link = DoHLink(url: url, dialer: tlsDialer, version: .http2)
            link.start(http2: connection)
            return link
        }
        let link = DoHLink(url: url, dialer: tlsDialer, version: .http11)
        link.start(http1: stream)
        return link
    }

    /// TLS connections made so far (the first included).
    package var connectionCount: Int { state.withLock { $0.connections } }
    /// Non-200 answers that paused the link so far.
    package var pauseCount: Int { state.withLock { $0.pauses } }
    /// Answers dropped so far (wrong status or content type, body over the cap, malformed), and
    /// queries dropped for a pause or a failed dial.
    package var droppedCount: Int { state.withLock { $0.dropped } }

    package func send(_ query: [UInt8]) async throws(DnsttError) {
        let (closed, paused) = state.withLock { state -> (Bool, Bool) in
            let paused = state.pausedUntil.map { ContinuousClock.now < $0 } ?? false
            if paused { state.dropped += 1 }
            return (state.closed, paused)
        }
        guard !closed else { throw DnsttError(code: .resolverLinkClosed, kind: .usage, message: "the DoH link is closed") }
        guard !paused else { return }
        outgoing.push(query)
    }

    package func receive() async throws(DnsttError) -> [UInt8]? {
        await incoming.next()
    }

    package func close() async {
        let (workers, http2, streams) = state.withLock { state -> ([Task<Void, Never>], Shared, [BrowserTLSStream]) in
            state.closed = true
            defer { state.workers = []; state.http2 = .idle; state.http1Streams = [:] }
            return (state.workers, state.http2, Array(state.http1Streams.values))
        }
        for worker in workers { worker.cancel() }
        switch http2 {
        case .connected(let connection): connection.close()
        case .dialing(let task): task.cancel()
        case .idle: break
        }
        for stream in streams { stream.close() }
        outgoing.close()
        incoming.close()
    }

    // MARK: - Workers

    private func start(http2 connection: HTTP2Connection) {
        let workers = (0..<Self.maximumInFlight).map { _ in Task { [self] in await runHTTP2Worker() } }
        adopt(workers: workers) { state in
            state.http2 = .connected(connection)
        } orElse: {
            connection.close()
        }
    }

    private func start(http1 stream: BrowserTLSStream) {
        var first: BrowserTLSStream? = stream
        var workers: [Task<Void, Never>] = []
        for _ in 0..<Self.http1Connections {
            let given = first
            first = nil
            workers.append(Task { [self] in await runHTTP1Worker(first: given) })
        }
        adopt(workers: workers) { _ in } orElse: {
            stream.close()
        }
    }

    private func adopt(workers: [Task<Void, Never>], _ update: (inout State) -> Void, orElse: () -> Void) {
        let closed = state.withLock { state -> Bool in
            state.connections = 1
            guard !state.closed else { return true }
            state.workers = workers
            update(&state)
            return false
        }
        if closed {
            for worker in workers { worker.cancel() }
            orElse()
        }
    }

    /// The next query to send, nil once the link is closed. A query taken while the link is paused
    /// is dropped.
    private func nextQuery() async -> [UInt8]? {
        while let query = await outgoing.next() {
            let paused = state.withLock { state -> Bool in
                guard let until = state.pausedUntil, ContinuousClock.now < until else { return false }
                state.dropped += 1
                return true
            }
            if !paused { return query }
        }
        return nil
    }

    private func runHTTP2Worker() async {
        while let query = await nextQuery() {
            guard let connection = await http2Connection() else {
                state.withLock { $0.dropped += 1 }
                continue
            }
            let request = HTTP2Request(method: "POST", authority: url.authority, path: url.target, headers: [
                HTTP2Header(name: "content-type", value: Self.mediaType),
                HTTP2Header(name: "accept", value: Self.mediaType),
                HTTP2Header(name: "content-length", value: String(query.count)),
            ], body: query)
            do {
                let response = try await connection.send(request, bodyLimit: Self.bodyLimit, timeout: Self.requestTimeout)
                take(status: response.status, contentType: response.value("content-type").map { Array($0.utf8) },
                     retryAfter: response.value("retry-after").map { Array($0.utf8) }, body: response.body)
            } catch {
                state.withLock { $0.dropped += 1 }
                // A stream reset, a body past the cap or a request past its deadline leave the
                // connection working; a connection that failed (closed, GOAWAY, broken framing:
                // HTTP2Connection reports them all as kind network to the requests) needs a new one.
                if error.kind == .network { forget(connection) }
            }
        }
    }

    /// The shared HTTP/2 connection, dialled when there is none (one dial for all the workers
    /// waiting); nil while a failed dial's backoff runs or when the dial fails.
    private func http2Connection() async -> HTTP2Connection? {
        enum Step { case use(HTTP2Connection), wait(Task<HTTP2Connection?, Never>), none }
        let step = state.withLock { state -> Step in
            guard !state.closed else { return .none }
            switch state.http2 {
            case .connected(let connection):
                return .use(connection)
            case .dialing(let task):
                return .wait(task)
            case .idle:
                if let notBefore = state.dialNotBefore, ContinuousClock.now < notBefore { return .none }
                let task = Task { [self] in await dialHTTP2() }
                state.http2 = .dialing(task)
                return .wait(task)
            }
        }
        switch step {
        case .use(let connection): return connection
        case .wait(let task): return await task.value
        case .none: return nil
        }
    }

    private func dialHTTP2() async -> HTTP2Connection? {
        var connection: HTTP2Connection?
        if let stream = try? await dialer.connect() {
            if stream.applicationProtocol == "h2" {
                connection = try? await HTTP2Connection.open(over: stream)
                if connection == nil { stream.close() }
            } else {
                stream.close()
            }
        }
        let closed = state.withLock { state -> Bool in
            if let connection, !state.closed {
                state.http2 = .connected(connection)
                state.connections += 1
                state.redialDelay = Self.firstRedialDelay
                state.dialNotBefore = nil
            } else {
                state.http2 = .idle
                state.dialNotBefore = ContinuousClock.now + state.redialDelay
                state.redialDelay = min(state.redialDelay * 2, Self.maximumRedialDelay)
            }
            return state.closed
        }
        if closed { connection?.close(); return nil }
        return connection
    }

    private func forget(_ connection: HTTP2Connection) {
        let current = state.withLock { state -> Bool in
            guard case .connected(let held) = state.http2, held === connection else { return false }
            state.http2 = .idle
            return true
        }
        if current { connection.close() }
    }

    private func runHTTP1Worker(first: BrowserTLSStream?) async {
        var stream = first
        if let stream { track(stream) }
        defer { if let stream { untrack(stream); stream.close() } }
        while let query = await nextQuery() {
            if stream == nil {
                stream = await dialHTTP1()
                guard let stream else { state.withLock { $0.dropped += 1 }; continue }
                track(stream)
            }
            guard let current = stream else { continue }
            let reusable = await exchange(query, over: current)
            if !reusable {
                untrack(current)
                current.close()
                stream = nil
            }
        }
    }

    private func dialHTTP1() async -> BrowserTLSStream? {
        let allowed = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            if let notBefore = state.dialNotBefore, ContinuousClock.now < notBefore { return false }
            return true
        }
        guard allowed else { return nil }
        var stream = try? await dialer.connect()
        if let opened = stream, opened.applicationProtocol == "h2" {
            opened.close()
            stream = nil
        }
        state.withLock { state in
            if stream != nil {
                state.connections += 1
                state.redialDelay = Self.firstRedialDelay
                state.dialNotBefore = nil
            } else {
                state.dialNotBefore = ContinuousClock.now + state.redialDelay
                state.redialDelay = min(state.redialDelay * 2, Self.maximumRedialDelay)
            }
        }
        return stream
    }

    private func track(_ stream: BrowserTLSStream) {
        let closed = state.withLock { state -> Bool in
            if !state.closed { state.http1Streams[ObjectIdentifier(stream)] = stream }
            return state.closed
        }
        if closed { stream.close() }
    }

    private func untrack(_ stream: BrowserTLSStream) {
        state.withLock { _ = $0.http1Streams.removeValue(forKey: ObjectIdentifier(stream)) }
    }

    /// The request's bytes: what Go's HTTP/1.1 client sends for the reference's request, without
    /// its user-agent (the reference removes it) and without an accept-encoding we could not honour.
    static func http1Request(_ query: [UInt8], url: DoHURL) -> [UInt8] {
        var head = "POST \(url.target) HTTP/1.1\r\n"
        head += "Host: \(url.authority)\r\n"
        head += "Content-Length: \(query.count)\r\n"
        head += "Accept: \(mediaType)\r\n"
        head += "Content-Type: \(mediaType)\r\n"
        head += "\r\n"
        return Array(head.utf8) + query
    }

    /// One POST and its answer on `stream` within the request deadline; whether the connection can
    /// carry the next request. The answer is read by TransportWire's HTTP1ResponseReader (its caps,
    /// the body at most ``bodyLimit``).
    private func exchange(_ query: [UInt8], over stream: BrowserTLSStream) async -> Bool {
        let request = Self.http1Request(query, url: url)
        var reader = Self.http1Reader()
        do {
            let response: HTTP1Response? = try await withDeadline(Self.requestTimeout, expired: { stream.close() }) {
                try await stream.write(request)
                while true {
                    let bytes = try await stream.read(maximumCount: Self.readChunk)
                    do throws(WireError) {
                        // A truncated answer is no answer (nil); one framed by the close is.
                        if bytes.isEmpty { return try? reader.finish() }
                        // Bytes after the answer answer nothing (one request is in flight): a
                        // connection that sent them is not reused.
                        if let response = try reader.append(bytes) {
                            return reader.surplus == 0 ? response : HTTP1Response(head: response.head, body: response.body, reusable: false)
                        }
                    } catch {
                        throw Self.error(error)
                    }
                }
            }
            guard let response else {
                state.withLock { $0.dropped += 1 }
                return false
            }
            take(status: response.status, contentType: response.head.value("content-type"), retryAfter: response.head.value("retry-after"),
                 body: response.body)
            return response.reusable
        } catch {
            state.withLock { $0.dropped += 1 }
            // A refused body still pauses the link when its status was not 200.
            if let status = reader.status, status != 200 { pause(retryAfter: nil) }
            return false
        }
    }

    /// The reader for one answer over HTTP/1.1: TransportWire's, with the body at most ``bodyLimit``
    /// and its other caps as they are (chunk-size line 1024 bytes, trailers 16 KiB, 8 interim 1xx).
    package static func http1Reader() -> HTTP1ResponseReader {
        HTTP1ResponseReader(bodyLimit: bodyLimit)
    }

    /// The reader's error in the link's words: past a cap is `doh-response-too-large`, anything else
    /// `doh-response-malformed`.
    package static func error(_ error: WireError) -> DnsttError {
        let tooLarge = error.code == .httpTooLarge || error.code == .httpBodyTooLarge
        return DnsttError(code: tooLarge ? .dohResponseTooLarge : .dohResponseMalformed, kind: .protocolViolation,
                          message: "the resolver's HTTP/1.1 answer was refused: \(error.message)")
    }

    /// The verdict on one answer (``DoHAnswer``): a message for the session, a drop, or a pause.
    private func take(status: Int, contentType: [UInt8]?, retryAfter: [UInt8]?, body: [UInt8]) {
        switch DoHAnswer.verdict(status: status, contentType: contentType, retryAfter: retryAfter, body: body, now: Date()) {
        case .message(let message):
            if !incoming.push(message) { state.withLock { $0.dropped += 1 } }
        case .dropped:
            state.withLock { $0.dropped += 1 }
        case .pause(let delay):
            pause(for: delay)
        }
    }

    private func pause(retryAfter: [UInt8]?) {
        pause(for: RetryAfter.delay(retryAfter, now: Date()))
    }

    private func pause(for delay: Duration) {
        state.withLock { state in
            let until = ContinuousClock.now + delay
            state.pausedUntil = max(state.pausedUntil ?? until, until)
            state.pauses += 1
            state.dropped += 1
        }
        // Queries already queued are dropped, as the reference's are.
        outgoing.removeAll()
    }
}
