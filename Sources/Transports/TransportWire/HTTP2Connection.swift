internal import CNghttp2
import Synchronization

/// An HTTP/2 client connection (RFC 9113) over a connected byte stream, normally TLS whose ALPN
/// chose "h2": what a browser speaks to a server that picks h2, so offering h2 in the ClientHello is
/// honest. Requests may run concurrently, each on its own stream with its own deadline.
///
/// libnghttp2 does the framing, HPACK and flow control on memory buffers (``HTTP2Session``); this
/// class moves bytes: one task reads the connection and feeds the session, and every output the
/// session makes is written in order through one ``SerialSection``.
///
/// Hostile input: a response's header block is capped at ``maximumHeaderBytes`` and
/// ``maximumHeaderCount``, its body at the request's `bodyLimit`, the streams open at once at
/// ``maximumConcurrentRequests``; nghttp2 caps SETTINGS, CONTINUATION and control-frame floods
/// (``HTTP2Session``). A stream past a cap is reset and its request fails; the connection lives on.
/// Every request has a deadline; the connection's reader ends when the connection is closed.
public final class HTTP2Connection: Sendable {
    /// Header bytes (name + value + 32 each, as RFC 7541 section 4.1 counts them) of one response.
    public static let maximumHeaderBytes = 64 * 1024
    public static let maximumHeaderCount = 200
    /// Requests in flight at once on one connection; more fail at once.
    public static let maximumConcurrentRequests = 100
    /// Largest read from the connection; nghttp2 consumes each read whole before the next.
    static let readChunk = 16_384

    private let core: HTTP2ConnectionCore

    private init(core: HTTP2ConnectionCore) { self.core = core }

    /// Sends the connection preface and `settings`, and starts reading. `connection` is used by this
    /// object alone from here on and is closed by ``close()`` or when this object goes away.
    public static func open(over connection: any ByteStream,
                            settings: HTTP2ClientSettings = .firefox) async throws(WireError) -> HTTP2Connection {
        let core = HTTP2ConnectionCore(connection: connection, session: try HTTP2Session(settings: settings))
        try await core.flush()
        core.startReading()
        return HTTP2Connection(core: core)
    }

    /// The reader holds the core, not this object, so dropping the last reference closes.
    deinit { core.close() }

    /// Sends `request` and waits for its whole response. Throws `http2TooLarge` when the response
    /// passes a cap (`bodyLimit` for the body), `timeout` when `timeout` passes first (the stream is
    /// reset), `http2Failed` when the server resets the stream or the connection fails.
    public func send(_ request: HTTP2Request, bodyLimit: Int, timeout: Duration) async throws(WireError) -> HTTP2Response {
        try await core.send(request, bodyLimit: bodyLimit, timeout: timeout)
    }

    /// Ends every request in flight with a failure and closes the connection.
    public func close() { core.close() }
}

/// The connection's state, shared by the public object and the reading task.
private final class HTTP2ConnectionCore: Sendable {
    private let connection: any ByteStream
    private let session: Mutex<HTTP2Session>
    private let sendOrder = SerialSection()
    private let reader = Mutex<Task<Void, Never>?>(nil)

    init(connection: any ByteStream, session: consuming sending HTTP2Session) {
        self.connection = connection
        self.session = Mutex(session)
    }

    func startReading() {
        let task = Task { await self.readUntilClosed() }
        reader.withLock { $0 = task }
    }

    func send(_ request: HTTP2Request, bodyLimit: Int, timeout: Duration) async throws(WireError) -> HTTP2Response {
        let streamID = try session.withLock { session throws(WireError) in try session.submit(request, bodyLimit: bodyLimit) }
        do {
            try await flush()
        } catch {
            cancel(streamID, error)
            throw error
        }
        let timer = Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil, let self else { return }
            self.cancel(streamID, WireError(.timeout, kind: .timeout, "no complete HTTP/2 response within \(timeout)"))
            try? await self.flush()
        }
        defer { timer.cancel() }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<HTTP2Response, WireError>, Never>) in
            let ready = session.withLock { $0.await(streamID, continuation) }
            if let ready { continuation.resume(returning: ready) }
        }
        return try result.get()
    }

    /// Ends every request in flight with a failure and closes the connection.
    func close() {
        let waiting = session.withLock { $0.failAll(WireError(.closed, kind: .network, "the HTTP/2 connection was closed")) }
        waiting.resumeAll()
        reader.withLock { $0?.cancel() }
        connection.close()
    }

    private func cancel(_ streamID: Int32, _ error: WireError) {
        let waiting = session.withLock { $0.cancel(streamID, error) }
        waiting.resumeAll()
    }

    /// Writes everything the session has queued, in order.
    func flush() async throws(WireError) {
        do {
            try await sendOrder.run {
                let pending = try session.withLock { session throws(WireError) in try session.takeOutbound() }
                if !pending.isEmpty { try await connection.write(pending) }
            }
        } catch let error as WireError {
            fail(error)
            throw error
        } catch {
            let failure = WireError(.http2Failed, kind: .network, "writing to the HTTP/2 connection failed: \(error)")
            fail(failure)
            throw failure
        }
    }

    private func fail(_ error: WireError) {
        let waiting = session.withLock { $0.failAll(error) }
        waiting.resumeAll()
        connection.close()
    }

    private func readUntilClosed() async {
        while !Task.isCancelled {
            let bytes: [UInt8]
            do {
                bytes = try await connection.read(maximumCount: HTTP2Connection.readChunk)
            } catch {
                fail(WireError(.http2Failed, kind: .network, "the HTTP/2 connection failed: \(error)"))
                return
            }
            guard !bytes.isEmpty else {
                fail(WireError(.closed, kind: .network, "the server closed the HTTP/2 connection"))
                return
            }
            let outcome = session.withLock { $0.receive(bytes) }
            outcome.finished.resumeAll()
            if let error = outcome.error {
                try? await flush()  // a GOAWAY nghttp2 queued tells the server why
                fail(error)
                return
            }
            do { try await flush() } catch { return }
            if session.withLock({ $0.isFinished }) {
                fail(WireError(.http2Failed, kind: .network, "the server ended the HTTP/2 connection (GOAWAY)"))
                return
            }
        }
    }
}
