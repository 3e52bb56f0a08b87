internal import CCurl
import PosternSystem
import Foundation
import PosternTor
import TransportWire
#if canImport(Glibc)
import Glibc
#endif

/// A whole WebSocket data message (TransportWire's codec, the one both WebSocket users share).
public typealias WebSocketMessage = TransportWire.WebSocketMessage
/// A close frame's status code and reason.
public typealias WebSocketCloseStatus = TransportWire.WebSocketCloseStatus

/// An RFC 6455 client connection over a byte stream libcurl opened (CONNECT_ONLY) through the
/// route's SOCKS5 proxy (remote DNS) with TLS for wss. Framing and the opening handshake are
/// TransportWire's (WebSocketFraming.swift, WebSocketHandshake.swift).
///
/// The curl handle belongs to one dedicated thread, which writes queued frames and reads; the async
/// side sees ``messages`` and enqueues sends. A close frame from the server ends ``messages``
/// normally (``closeStatus`` says why); a protocol violation, an oversize message (1009), a silent
/// (half-open) connection or a lost connection ends it with an ``AppLayerError``.
///
/// What a server can make this connection hold is capped (docs/SECURITY.md, "Caps and deadlines"):
/// one message of ``maximumInboundMessageBytes`` being reassembled, ``maximumQueuedMessages``
/// delivered and not yet read (then the thread stops reading, so TCP pushes back on the server),
/// ``maximumPongBacklogBytes`` of answers to its pings waiting to go out, the last
/// ``maximumRememberedPongs`` pongs, and ``maximumOutboxBytes`` of our own frames queued.
public final class WebSocketConnection: @unchecked Sendable {
    /// The largest message accepted, 512 KiB; a bigger one closes the connection with 1009.
    public static let maximumInboundMessageBytes = 512 * 1024
    /// Messages received and not yet taken from ``messages``; the reading thread waits beyond this.
    public static let maximumQueuedMessages = 64
    /// A ping is answered only while less than this is waiting to be sent: a server that pings and
    /// never reads cannot make us buffer pongs without end (RFC 6455 §5.5.3 allows answering only
    /// the latest ping).
    public static let maximumPongBacklogBytes = 16 * 1024
    /// Pongs kept for ``receivedPongs``; older ones are forgotten.
    public static let maximumRememberedPongs = 16
    /// Our own frames waiting for the server to read them; ``send(_:)`` fails beyond this.
    public static let maximumOutboxBytes = 4 * 1024 * 1024
    /// Silence from the server this long ends the connection as half-open; after half of it we
    /// send a ping, which any live server answers.
    public static let defaultIdleTimeout: Duration = .seconds(90)

    /// The ws:// or wss:// URL connected to.
    public let url: URL
    /// The messages the server sends, in order (one consumer).
    public let messages: WebSocketMessages
    private let continuation: AsyncThrowingStream<WebSocketMessage, Error>.Continuation
    private let queueCredits: DispatchSemaphore
    private let idleTimeout: Duration
    /// Owned by the connection's thread; released (closing the socket) when the thread ends.
    private var handle: CurlHandle?
    private let socket: Int32
    private let wakeRead: Int32, wakeWrite: Int32
    private let lock = NSLock()
    private var outbox: [UInt8] = []
    private var closeSent = false
    private var finished = false
    private var receivedClose: WebSocketCloseStatus?
    private var pongs: [[UInt8]] = []
    private var parser: WebSocketFrameParser
    private let closeWaiters = NSCondition()

    /// The status from the server's close frame (or 1006 when the stream just ended).
    public var closeStatus: WebSocketCloseStatus? { lock.withLock { receivedClose } }
    /// Payloads of the last pongs received (answers to ``ping(_:)``), at most ``maximumRememberedPongs``.
    public var receivedPongs: [[UInt8]] { lock.withLock { pongs } }
    /// Bytes of our frames not yet taken by the server (tests check the pong backlog with it).
    var pendingOutboundBytes: Int { lock.withLock { outbox.count } }

    /// Opens the connection: TCP (through SOCKS when the route says so), TLS for wss (certificate
    /// and host name verified; `certificateAuthorityFile` adds a private CA), the opening handshake;
    /// then starts the connection's thread.
    public static func connect(to url: URL, route: NetworkRoute, isolation: String? = nil,
                               timeout: Duration = .seconds(30),
                               certificateAuthorityFile: String? = nil,
                               maximumMessageBytes: Int = maximumInboundMessageBytes,
                               idleTimeout: Duration = defaultIdleTimeout) async throws(AppLayerError) -> WebSocketConnection {
        guard let scheme = url.scheme?.lowercased(), scheme == "ws" || scheme == "wss", let host = url.host, !host.isEmpty else {
            throw AppLayerError(.invalidURL, kind: .usage, "not a ws:// or wss:// URL: \(url.absoluteString)")
        }
        try CurlHandle.refuseOnionOutsideTor(host: host, route: route)
        let secure = scheme == "wss"
        let port = url.port ?? (secure ? 443 : 80)
        let isolationKey = isolation ?? "ws|\(host.lowercased()):\(port)"
        return try await runOnDedicatedThread(name: "postern-ws-connect") { () throws(AppLayerError) -> WebSocketConnection in
            let handle = try CurlHandle()
            try handle.applyCommon(timeout: timeout)
            try handle.apply(route: route, isolation: isolationKey, host: host)
            let hostPart = host.contains(":") ? "[\(host)]" : host
            try handle.set(CURLOPT_URL, "\(secure ? "https" : "http")://\(hostPart):\(port)/")
            try handle.set(CURLOPT_CONNECT_ONLY, 1)
            // Certificates are always verified; a private CA (tests, self-hosted relays) may be named.
            try handle.set(CURLOPT_SSL_VERIFYPEER, 1)
            try handle.set(CURLOPT_SSL_VERIFYHOST, 2)
            if let certificateAuthorityFile { try handle.set(CURLOPT_CAINFO, certificateAuthorityFile) }
            try handle.checkTransfer(curl_easy_perform(handle.pointer), "WebSocket connect to \(host):\(port) over \(route)")
            var socket: curl_socket_t = -1
            try CurlHandle.check(ccurl_getinfo_socket(handle.pointer, &socket), "active socket")
            let leftover = try handshake(handle: handle, socket: socket, url: url, host: hostPart, port: port,
                                         secure: secure, timeout: timeout)
            let connection = try WebSocketConnection(url: url, handle: handle, socket: socket, maximumMessageBytes: maximumMessageBytes,
                                                     idleTimeout: idleTimeout)
            connection.start(initialBytes: leftover)
            return connection
        }
    }

    private init(url: URL, handle: CurlHandle, socket: Int32, maximumMessageBytes: Int, idleTimeout: Duration) throws(AppLayerError) {
        self.url = url
        self.idleTimeout = idleTimeout
        self.handle = handle
        self.socket = socket
        parser = WebSocketFrameParser(maximumMessageBytes: maximumMessageBytes)
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw AppLayerError(.libraryFailure, "pipe: \(String(cString: strerror(errno)))") }
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
        _ = fcntl(fds[1], F_SETFL, O_NONBLOCK)
        wakeRead = fds[0]
        wakeWrite = fds[1]
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: WebSocketMessage.self, throwing: Error.self,
                                                                    bufferingPolicy: .unbounded)
        self.continuation = continuation
        // Created at 0 and signalled up to the cap: libdispatch traps ("Semaphore object deallocated
        // while in use") when a semaphore is disposed below the value it was created with, which is
        // exactly the state of a connection dropped with messages still unread (seen in the test run:
        // the whole process died in WebSocketConnection.deinit).
        let credits = DispatchSemaphore(value: 0)
        for _ in 0..<Self.maximumQueuedMessages { credits.signal() }
        queueCredits = credits
        messages = WebSocketMessages(stream: stream, credits: credits)
    }

    deinit {
        _ = Glibc.close(wakeRead)
        _ = Glibc.close(wakeWrite)
    }

    // MARK: Sending (any thread)

    /// Sends `message` as one frame; throws `webSocketClosed` once closed, `tooLarge` when the
    /// outbox is full.
    public func send(_ message: WebSocketMessage) throws(AppLayerError) {
        try enqueue(WebSocketFrameEncoder.message(message))
    }

    /// Sends `message` as several frames of at most `fragmentSize` bytes each.
    public func send(_ message: WebSocketMessage, fragmentSize: Int) throws(AppLayerError) {
        try enqueue(WebSocketFrameEncoder.message(message, fragmentSize: fragmentSize))
    }

    /// Sends a ping with `payload` (at most 125 bytes are sent).
    public func ping(_ payload: [UInt8] = []) throws(AppLayerError) {
        try enqueue(WebSocketFrameEncoder.frame(.ping, payload: payload.prefix(125)))
    }

    /// Starts the closing handshake and waits (up to `timeout`) for the server's close frame.
    public func close(_ status: WebSocketCloseStatus = WebSocketCloseStatus(code: WebSocketCloseStatus.normal),
                      timeout: Duration = .seconds(5)) async {
        let alreadySent = lock.withLock { () -> Bool in
            defer { closeSent = true }
            if !closeSent && !finished { outbox += WebSocketFrameEncoder.close(status) }
            return closeSent
        }
        if !alreadySent { wake() }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, !lock.withLock({ finished }) {
            try? await Task.sleep(for: .milliseconds(20))
        }
        lock.withLock { finished = true }
        wake()
    }

    private func enqueue(_ bytes: [UInt8]) throws(AppLayerError) {
        enum Verdict { case accepted, closed, full }
        let verdict = lock.withLock { () -> Verdict in
            guard !closeSent, !finished else { return .closed }
            guard outbox.count + bytes.count <= Self.maximumOutboxBytes else { return .full }
            outbox += bytes
            return .accepted
        }
        switch verdict {
        case .accepted: wake()
        case .closed: throw AppLayerError(.webSocketClosed, "the WebSocket to \(url.host ?? "") is closed")
        case .full:
            throw AppLayerError(.tooLarge, "the WebSocket server is not reading: over \(Self.maximumOutboxBytes) bytes wait to be sent")
        }
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    // MARK: The connection's thread

    private func start(initialBytes: [UInt8]) {
        let thread = Thread { [self] in run(initialBytes: initialBytes) }
        thread.name = "postern-ws"
        thread.start()
    }

    private func run(initialBytes: [UInt8]) {
        var failure: AppLayerError?
        guard let curl = handle else { return }
        do throws(AppLayerError) {
            if !initialBytes.isEmpty { try receive(initialBytes) }
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            var lastHeard = ContinuousClock.now
            var pinged = false
            while !lock.withLock({ finished }) {
                // A half-open connection (the server vanished without FIN) reads nothing forever:
                // ping once half-way through the idle timeout, give up at its end.
                let silence = ContinuousClock.now - lastHeard
                if silence >= idleTimeout {
                    throw AppLayerError(.timedOut, "the WebSocket server sent nothing for \(idleTimeout) (half-open connection)")
                }
                if silence >= idleTimeout / 2 && !pinged {
                    pinged = true
                    lock.withLock { if !closeSent { outbox += WebSocketFrameEncoder.frame(.ping, payload: Array("postern-idle".utf8)) } }
                }
                let pending = try flushOutbox()
                var fds = [pollfd(fd: socket, events: Int16(POLLIN) | (pending ? Int16(POLLOUT) : 0), revents: 0),
                           pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
                _ = poll(&fds, 2, 1000)
                var drain = [UInt8](repeating: 0, count: 64)
                while read(wakeRead, &drain, drain.count) > 0 {}
                // TLS may hold decrypted bytes the socket no longer shows: read until EAGAIN.
                while !lock.withLock({ finished }) {
                    var received = 0
                    let code = buffer.withUnsafeMutableBytes { curl_easy_recv(curl.pointer, $0.baseAddress, $0.count, &received) }
                    if code == CURLE_AGAIN { break }
                    try CurlHandle.check(code, "WebSocket receive")
                    if received == 0 {
                        if lock.withLock({ receivedClose == nil }) {
                            throw AppLayerError(.webSocketClosed, "the server closed the connection without a close frame")
                        }
                        lock.withLock { finished = true }
                        break
                    }
                    lastHeard = ContinuousClock.now
                    pinged = false
                    try receive(buffer[0..<received])
                }
            }
            _ = try? flushOutbox()
        } catch {
            failure = error
        }
        if lock.withLock({ closeSent }) { lingerAfterClose(curl) }
        lock.withLock {
            finished = true
            if receivedClose == nil { receivedClose = WebSocketCloseStatus(code: WebSocketCloseStatus.abnormal) }
        }
        // Freeing the curl handle closes the TCP connection: the server's closing handshake ends now.
        handle = nil
        if let failure { continuation.finish(throwing: failure) } else { continuation.finish() }
    }

    /// Writes what it can; true when bytes remain (then the socket is polled for writability).
    private func flushOutbox() throws(AppLayerError) -> Bool {
        let bytes = lock.withLock { outbox }
        guard !bytes.isEmpty else { return false }
        var sent = 0
        guard let handle else { return false }
        let code = bytes.withUnsafeBytes { curl_easy_send(handle.pointer, $0.baseAddress, $0.count, &sent) }
        if code != CURLE_AGAIN { try CurlHandle.check(code, "WebSocket send") }
        lock.withLock { outbox.removeFirst(sent) }
        return lock.withLock { !outbox.isEmpty }
    }

    private func receive(_ bytes: some Collection<UInt8>) throws(AppLayerError) {
        let events: [WebSocketEvent]
        do {
            events = try parser.feed(bytes)
        } catch {
            // Tell the server why, then fail the stream.
            lock.withLock {
                if !closeSent { outbox += WebSocketFrameEncoder.close(error.status); closeSent = true }
            }
            _ = try? flushOutbox()
            let code: AppLayerError.Code = error.status.code == WebSocketCloseStatus.messageTooBig ? .tooLarge : .webSocketProtocol
            throw AppLayerError(code, "WebSocket closed with \(error.status.code): \(error.status.reason)")
        }
        for event in events {
            switch event {
            case .message(let message):
                // Wait for the reader to take one (it stops this thread reading, so the server's
                // sends back up into TCP rather than into our memory).
                while queueCredits.wait(timeout: .now() + .milliseconds(100)) == .timedOut {
                    if lock.withLock({ finished }) { return }
                }
                continuation.yield(message)
            case .ping(let payload):
                lock.withLock {
                    if !closeSent && outbox.count < Self.maximumPongBacklogBytes { outbox += WebSocketFrameEncoder.frame(.pong, payload: payload) }
                }
            case .pong(let payload):
                lock.withLock {
                    pongs.append(payload)
                    if pongs.count > Self.maximumRememberedPongs { pongs.removeFirst(pongs.count - Self.maximumRememberedPongs) }
                }
            case .close(let status):
                lock.withLock {
                    receivedClose = status ?? WebSocketCloseStatus(code: 1005)
                    // Echo the code (RFC 6455 §5.5.1) unless we started the close.
                    if !closeSent {
                        outbox += WebSocketFrameEncoder.close(status ?? WebSocketCloseStatus(code: WebSocketCloseStatus.normal))
                        closeSent = true
                    }
                }
                _ = try? flushOutbox()
                lock.withLock { finished = true }
                return
            }
        }
    }

    /// After our close frame: get it all out, then read and discard until the server closes (or 2 s
    /// pass). Closing the socket with unread bytes (say, the rest of an oversize message) would send
    /// an RST, and the server would lose our close frame and see 1006 instead of our code.
    private func lingerAfterClose(_ curl: CurlHandle) {
        let deadline = ContinuousClock.now + .seconds(2)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while ContinuousClock.now < deadline {
            let pending = (try? flushOutbox()) ?? false
            var fds = [pollfd(fd: socket, events: Int16(POLLIN) | (pending ? Int16(POLLOUT) : 0), revents: 0)]
            _ = poll(&fds, 1, 100)
            var received = 0
            let code = buffer.withUnsafeMutableBytes { curl_easy_recv(curl.pointer, $0.baseAddress, $0.count, &received) }
            if code == CURLE_AGAIN { continue }
            if (code != CURLE_OK || received == 0) && !pending { return }
        }
    }

    // MARK: Opening handshake (blocking, on the connect thread)

    private static func handshake(handle: CurlHandle, socket: Int32, url: URL, host: String, port: Int, secure: Bool,
                                  timeout: Duration) throws(AppLayerError) -> [UInt8] {
        let key = WebSocketHandshake.newKey()
        var path = url.path.isEmpty ? "/" : url.path
        if let query = url.query { path += "?" + query }
        let defaultPort = secure ? 443 : 80
        let deadline = ContinuousClock.now + timeout
        var outgoing = WebSocketHandshake.request(target: path, host: "\(host)\(port == defaultPort ? "" : ":\(port)")", key: key)
        while !outgoing.isEmpty {
            var sent = 0
            let code = outgoing.withUnsafeBytes { curl_easy_send(handle.pointer, $0.baseAddress, $0.count, &sent) }
            if code == CURLE_AGAIN { try wait(socket, for: Int16(POLLOUT), until: deadline); continue }
            try CurlHandle.check(code, "WebSocket handshake send")
            outgoing.removeFirst(sent)
        }
        var reader = WebSocketHandshakeReader(key: key)
        var buffer = [UInt8](repeating: 0, count: 4 * 1024)
        while true {
            var received = 0
            let code = buffer.withUnsafeMutableBytes { curl_easy_recv(handle.pointer, $0.baseAddress, $0.count, &received) }
            if code == CURLE_AGAIN { try wait(socket, for: Int16(POLLIN), until: deadline); continue }
            try CurlHandle.check(code, "WebSocket handshake receive")
            guard received > 0 else { throw AppLayerError(.webSocketProtocol, "connection closed during the handshake") }
            do {
                if let leftover = try reader.feed(buffer[0..<received]) { return leftover }
            } catch {
                throw AppLayerError(.webSocketProtocol, error.message)
            }
            // A server that drips bytes never makes recv say "again": check the deadline here too.
            guard ContinuousClock.now < deadline else { throw AppLayerError(.timedOut, "WebSocket handshake timed out") }
        }
    }

    static func acceptValue(for key: String) -> String { WebSocketHandshake.acceptValue(for: key) }

    private static func wait(_ socket: Int32, for events: Int16, until deadline: ContinuousClock.Instant) throws(AppLayerError) {
        let remaining = deadline - ContinuousClock.now
        guard remaining > .zero else { throw AppLayerError(.timedOut, "WebSocket handshake timed out") }
        var fd = pollfd(fd: socket, events: events, revents: 0)
        _ = poll(&fd, 1, Int32(min(1000, remaining.components.seconds * 1000 + 1)))
    }
}

/// The messages a server sent, in order. Taking one lets the connection's thread read on (at most
/// ``WebSocketConnection/maximumQueuedMessages`` wait here unread).
public struct WebSocketMessages: AsyncSequence, Sendable {
    public typealias Element = WebSocketMessage
    let stream: AsyncThrowingStream<WebSocketMessage, Error>
    let credits: DispatchSemaphore

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<WebSocketMessage, Error>.AsyncIterator
        let credits: DispatchSemaphore
        public mutating func next() async throws -> WebSocketMessage? {
            let message = try await base.next()
            if message != nil { credits.signal() }
            return message
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator(), credits: credits) }
}
