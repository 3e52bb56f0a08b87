#if canImport(Glibc)
import Glibc
import PosternSystem
#endif
import Dispatch
import Synchronization
import TransportWire

/// Opens the stream a broker request travels over. `tlsServerName` is set for https URLs: the
/// connector must then run TLS with that SNI (the front, when domain fronting).
public protocol SnowflakeStreamConnector: Sendable {
    func connect(host: String, port: UInt16, tlsServerName: String?) async throws(SnowflakeError) -> any ByteStream
}

/// Plain TCP (no TLS): enough for the test bed's broker and WebSocket server. Refuses https.
public struct PlainTCPConnector: SnowflakeStreamConnector {
    /// Applied to connect, and to every read and write (SO_RCVTIMEO/SO_SNDTIMEO).
    public var timeoutSeconds: Int

    public init(timeoutSeconds: Int = 15) {
        self.timeoutSeconds = timeoutSeconds
    }

    public func connect(host: String, port: UInt16, tlsServerName: String?) async throws(SnowflakeError) -> any ByteStream {
        guard tlsServerName == nil else {
            throw SnowflakeError(code: .unsupported, kind: .invalidInput,
                                 message: "this connector speaks plain TCP only; TLS (https) needs another connector")
        }
        return try await TCPByteStream.connect(host: host, port: port, timeoutSeconds: timeoutSeconds)
    }
}

/// A TCP connection. Blocking socket calls run on the stream's own dispatch queues (one per
/// direction), never on the cooperative pool. The descriptor has one owner and is closed once.
public final class TCPByteStream: ByteStream {
    private let descriptor: Mutex<Int32>
    private let readQueue = DispatchQueue(label: "snowflake.tcp.read")
    private let writeQueue = DispatchQueue(label: "snowflake.tcp.write")

    private init(descriptor: Int32) {
        self.descriptor = Mutex(descriptor)
    }

    /// Takes ownership of a connected socket (e.g. from accept); it is closed with the stream.
    static func adopting(descriptor: Int32) -> TCPByteStream {
        TCPByteStream(descriptor: descriptor)
    }

    deinit {
        descriptor.withLock { fd in
            if fd >= 0 { _ = Glibc.close(fd) }
            fd = -1
        }
    }

    static func connect(host: String, port: UInt16, timeoutSeconds: Int) async throws(SnowflakeError) -> TCPByteStream {
        let result: Result<Int32, SnowflakeError> = await withCheckedContinuation { continuation in
            DispatchQueue(label: "snowflake.tcp.connect").async {
                continuation.resume(returning: blockingConnect(host: host, port: port, timeoutSeconds: timeoutSeconds))
            }
        }
        return TCPByteStream(descriptor: try result.get())
    }

    private var currentDescriptor: Int32 { descriptor.withLock { $0 } }

    public func write(_ bytes: [UInt8]) async throws(SnowflakeError) {
        let fd = currentDescriptor
        let result: Result<Void, SnowflakeError> = await withCheckedContinuation { continuation in
            writeQueue.async {
                do throws(SystemCallError) {
                    try SystemCall.sendAll(fd, bytes)
                } catch {
                    continuation.resume(returning: .failure(socketError("write", error.number)))
                    return
                }
                continuation.resume(returning: .success(()))
            }
        }
        try result.get()
    }

    public func read(maximumCount: Int) async throws(SnowflakeError) -> [UInt8] {
        let fd = currentDescriptor
        let result: Result<[UInt8], SnowflakeError> = await withCheckedContinuation { continuation in
            readQueue.async {
                var buffer = [UInt8](repeating: 0, count: max(1, maximumCount))
                do throws(SystemCallError) {
                    let n = try SystemCall.retrying("recv") { buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) } }
                    continuation.resume(returning: .success(Array(buffer.prefix(n))))
                } catch {
                    continuation.resume(returning: .failure(socketError("read", error.number)))
                }
            }
        }
        return try result.get()
    }

    /// Half-closes: the peer reads end of stream, reading continues.
    public func closeWrite() async {
        let fd = currentDescriptor
        if fd >= 0 { _ = shutdown(fd, Int32(SHUT_WR)) }
    }

    public func close() {
        // shutdown wakes a blocked recv; the descriptor itself is closed in deinit, after the
        // queues can no longer use it.
        let fd = currentDescriptor
        if fd >= 0 { _ = shutdown(fd, Int32(SHUT_RDWR)) }
    }
}

private func socketError(_ operation: String, _ code: Int32) -> SnowflakeError {
    if code == EAGAIN || code == EWOULDBLOCK {
        return SnowflakeError(code: .timeout, kind: .network, message: "\(operation) timed out")
    }
    if code == EBADF || code == ENOTCONN || code == EPIPE {
        return SnowflakeError(code: .closed, kind: .network, message: "\(operation) on a closed connection")
    }
    return SnowflakeError(code: .connection, kind: .network, message: "\(operation) failed: \(String(cString: strerror(code)))")
}

/// getaddrinfo + connect with a timeout (poll on a non-blocking socket), then back to blocking mode
/// with read/write timeouts.
private func blockingConnect(host: String, port: UInt16, timeoutSeconds: Int) -> Result<Int32, SnowflakeError> {
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    var list: UnsafeMutablePointer<addrinfo>?
    let status = getaddrinfo(host, String(port), &hints, &list)
    guard status == 0, let first = list else {
        return .failure(SnowflakeError(code: .connection, kind: .network,
                                       message: "the host name could not be resolved: \(String(cString: gai_strerror(status)))"))
    }
    defer { freeaddrinfo(list) }
    var lastError = SnowflakeError(code: .connection, kind: .network, message: "no address to connect to")
    var entry: UnsafeMutablePointer<addrinfo>? = first
    while let info = entry {
        entry = info.pointee.ai_next
        let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
        if fd < 0 { lastError = socketError("socket", errno); continue }
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        var result = Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen)
        if result < 0 && errno == EINPROGRESS {
            var pollEntry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&pollEntry, 1, Int32(timeoutSeconds * 1000))
            if ready == 1 {
                var socketErrorCode: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &socketErrorCode, &length)
                if socketErrorCode == 0 { result = 0 } else { errno = socketErrorCode }
            } else if ready == 0 {
                errno = ETIMEDOUT
            }
        }
        if result == 0 {
            _ = fcntl(fd, F_SETFL, flags)
            var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            return .success(fd)
        }
        lastError = errno == ETIMEDOUT
            ? SnowflakeError(code: .timeout, kind: .network, message: "connect timed out")
            : socketError("connect", errno)
        _ = Glibc.close(fd)
    }
    return .failure(lastError)
}
