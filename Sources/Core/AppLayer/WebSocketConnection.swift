import CCurl
import CSodium
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An RFC 6455 client connection over a byte stream libcurl opened (CONNECT_ONLY) through the
/// route's SOCKS5 proxy (remote DNS) with TLS for wss. Framing is ours (WebSocketFraming.swift).
///
/// The curl handle belongs to one dedicated thread, which writes queued frames and reads; the async
/// side sees ``messages`` and enqueues sends. A close frame from the server ends ``messages``
/// normally (``closeStatus`` says why); a protocol violation, an oversize message (1009) or a lost
/// connection ends it with an ``AppLayerError``.
public final class WebSocketConnection: @unchecked Sendable {
    public static let maximumInboundMessageBytes = 512 * 1024
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    public let url: URL
    public let messages: AsyncThrowingStream<WebSocketMessage, Error>
    private let continuation: AsyncThrowingStream<WebSocketMessage, Error>.Continuation
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
    /// Payloads of the pongs received so far (answers to ``ping(_:)``).
    public var receivedPongs: [[UInt8]] { lock.withLock { pongs } }

    /// Opens the connection: TCP (through SOCKS when the route says so), TLS for wss (certificate
    /// and host name verified; `certificateAuthorityFile` adds a private CA), the opening handshake;
    /// then starts the connection's thread.
    public static func connect(to url: URL, route: NetworkRoute, isolation: String? = nil,
                               timeout: Duration = .seconds(30),
                               certificateAuthorityFile: String? = nil,
                               maximumMessageBytes: Int = maximumInboundMessageBytes) async throws(AppLayerError) -> WebSocketConnection {
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
            try CurlHandle.check(curl_easy_perform(handle.pointer), "WebSocket connect to \(host):\(port) over \(route)")
            var socket: curl_socket_t = -1
            try CurlHandle.check(ccurl_getinfo_socket(handle.pointer, &socket), "active socket")
            let leftover = try handshake(handle: handle, socket: socket, url: url, host: hostPart, port: port,
                                         secure: secure, timeout: timeout)
            let connection = try WebSocketConnection(url: url, handle: handle, socket: socket, maximumMessageBytes: maximumMessageBytes)
            connection.start(initialBytes: leftover)
            return connection
        }
    }

    private init(url: URL, handle: CurlHandle, socket: Int32, maximumMessageBytes: Int) throws(AppLayerError) {
        self.url = url
        self.handle = handle
        self.socket = socket
        parser = WebSocketFrameParser(maximumMessageBytes: maximumMessageBytes)
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw AppLayerError(.libraryFailure, "pipe: \(String(cString: strerror(errno)))") }
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
        _ = fcntl(fds[1], F_SETFL, O_NONBLOCK)
        wakeRead = fds[0]
        wakeWrite = fds[1]
        (messages, continuation) = AsyncThrowingStream.makeStream(bufferingPolicy: .unbounded)
    }

    deinit {
        _ = Glibc.close(wakeRead)
        _ = Glibc.close(wakeWrite)
    }

    // MARK: Sending (any thread)

    public func send(_ message: WebSocketMessage) throws(AppLayerError) {
        try enqueue(WebSocketFrameEncoder.message(message))
    }

    /// Sends `message` as several frames of at most `fragmentSize` bytes each.
    public func send(_ message: WebSocketMessage, fragmentSize: Int) throws(AppLayerError) {
        try enqueue(WebSocketFrameEncoder.message(message, fragmentSize: fragmentSize))
    }

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
        let accepted = lock.withLock { () -> Bool in
            guard !closeSent, !finished else { return false }
            outbox += bytes
            return true
        }
        guard accepted else { throw AppLayerError(.webSocketClosed, "the WebSocket to \(url.host ?? "") is closed") }
        wake()
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
            while !lock.withLock({ finished }) {
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
                continuation.yield(message)
            case .ping(let payload):
                lock.withLock { if !closeSent { outbox += WebSocketFrameEncoder.frame(.pong, payload: payload) } }
            case .pong(let payload):
                lock.withLock { pongs.append(payload) }
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
        var nonce = [UInt8](repeating: 0, count: 16)
        randombytes_buf(&nonce, 16)
        let key = Data(nonce).base64EncodedString()
        var path = url.path.isEmpty ? "/" : url.path
        if let query = url.query { path += "?" + query }
        let defaultPort = secure ? 443 : 80
        let request = "GET \(path) HTTP/1.1\r\nHost: \(host)\(port == defaultPort ? "" : ":\(port)")\r\n"
            + "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n"
        let deadline = ContinuousClock.now + timeout
        var outgoing = Array(request.utf8)
        while !outgoing.isEmpty {
            var sent = 0
            let code = outgoing.withUnsafeBytes { curl_easy_send(handle.pointer, $0.baseAddress, $0.count, &sent) }
            if code == CURLE_AGAIN { try wait(socket, for: Int16(POLLOUT), until: deadline); continue }
            try CurlHandle.check(code, "WebSocket handshake send")
            outgoing.removeFirst(sent)
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        let terminator: [UInt8] = [13, 10, 13, 10]
        while true {
            if let end = response.firstRange(of: terminator) {
                let head = String(decoding: response[..<end.lowerBound], as: UTF8.self)
                try validate(head, key: key)
                return Array(response[end.upperBound...])
            }
            guard response.count < 16 * 1024 else { throw AppLayerError(.webSocketProtocol, "handshake response too long") }
            var received = 0
            let code = buffer.withUnsafeMutableBytes { curl_easy_recv(handle.pointer, $0.baseAddress, $0.count, &received) }
            if code == CURLE_AGAIN { try wait(socket, for: Int16(POLLIN), until: deadline); continue }
            try CurlHandle.check(code, "WebSocket handshake receive")
            guard received > 0 else { throw AppLayerError(.webSocketProtocol, "connection closed during the handshake") }
            response += buffer[0..<received]
        }
    }

    static func acceptValue(for key: String) -> String {
        Data(SHA1.digest(Array((key + guid).utf8))).base64EncodedString()
    }

    private static func validate(_ head: String, key: String) throws(AppLayerError) {
        let lines = head.components(separatedBy: "\r\n")
        let statusParts = lines.first?.split(separator: " ") ?? []
        guard statusParts.count >= 2, statusParts[1] == "101" else {
            throw AppLayerError(.webSocketProtocol, "handshake refused: \(lines.first ?? "")")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        guard headers["upgrade"]?.lowercased() == "websocket",
              headers["connection"]?.lowercased().split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == "upgrade" }) == true else {
            throw AppLayerError(.webSocketProtocol, "handshake response lacks Upgrade: websocket / Connection: Upgrade")
        }
        guard headers["sec-websocket-accept"] == acceptValue(for: key) else {
            throw AppLayerError(.webSocketProtocol, "handshake response has a wrong Sec-WebSocket-Accept")
        }
        if let extensions = headers["sec-websocket-extensions"], !extensions.isEmpty {
            throw AppLayerError(.webSocketProtocol, "server selected an extension we did not offer")
        }
    }

    private static func wait(_ socket: Int32, for events: Int16, until deadline: ContinuousClock.Instant) throws(AppLayerError) {
        let remaining = deadline - ContinuousClock.now
        guard remaining > .zero else { throw AppLayerError(.timedOut, "WebSocket handshake timed out") }
        var fd = pollfd(fd: socket, events: events, revents: 0)
        _ = poll(&fd, 1, Int32(min(1000, remaining.components.seconds * 1000 + 1)))
    }
}
