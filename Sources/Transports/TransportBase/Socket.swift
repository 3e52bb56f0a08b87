#if canImport(Glibc)
// cepoll.h includes <sys/socket.h>: when CEpoll's clang module is built first it owns SOCK_STREAM
// and friends, which are then visible only to files that import it.
internal import CEpoll
import PosternSystem
import Glibc
#endif
import Synchronization
import TransportWire

enum SocketErrors {
    static func fromErrno(_ code: Int32, operation: String) -> TransportError {
        let reason = String(cString: strerror(code))
        switch code {
        case ECONNREFUSED:
            return TransportError(code: .connectionRefused, kind: .network, message: "\(operation): \(reason)")
        case ENETUNREACH:
            return TransportError(code: .networkUnreachable, kind: .network, message: "\(operation): \(reason)")
        case EHOSTUNREACH:
            return TransportError(code: .hostUnreachable, kind: .network, message: "\(operation): \(reason)")
        case ECONNRESET, EPIPE:
            return TransportError(code: .connectionReset, kind: .network, message: "\(operation): \(reason)")
        case ETIMEDOUT:
            return TransportError(code: .timedOut, kind: .timeout, message: "\(operation): \(reason)")
        default:
            return TransportError(code: .socketFailure, kind: .network, message: "\(operation): \(reason)")
        }
    }

    static let closedLocally = TransportError(code: .connectionClosed, kind: .cancelled,
                                              message: "the connection was closed locally")
}

/// A non-blocking TCP socket owned by exactly one object.
///
/// Reads and writes may run concurrently (one reader and one writer at a time). `abort` and `close`
/// may be called from anywhere: they shut the socket down and wake pending operations, while the
/// descriptor itself is released only in `deinit`, so a concurrent syscall can never hit a reused
/// descriptor number.
public final class TCPSocket: TransportConnection, @unchecked Sendable {
    let descriptor: Int32
    private let loop: IOEventLoop
    /// Set once; every later operation throws it.
    private let terminalError = Mutex<TransportError?>(nil)
    /// Bytes and times of this connection (connection assist's evidence).
    public let counters = FlowCounters()
    /// The ledger entry this connection reports its end to, for connections a dialer opened.
    private let flowEntry = Mutex<FlowEntry?>(nil)
    /// The gate's pass of a dialer's connection (``EndpointGate``), released when it ends.
    private let gatePass = Mutex<EndpointGate.Pass?>(nil)

    /// Takes ownership of a non-blocking descriptor.
    init(adopting descriptor: Int32, loop: IOEventLoop = .shared) throws(TransportError) {
        self.descriptor = descriptor
        self.loop = loop
        // No close here on failure: a class initializer that throws after its stored properties
        // are set still runs deinit, which closes the descriptor. Closing it here as well closed
        // it twice, and the second close could hit a descriptor another thread (tor's) had opened.
        try loop.register(descriptor)
    }

    deinit {
        // A socket dropped without close still ends its flow and frees its ip:port's place at the
        // gate (both ends are idempotent).
        endFlow(error: nil, endedByPeer: false)
        loop.deregister(descriptor)
        Glibc.close(descriptor)
    }

    /// Connects to `endpoint`; `timeout` bounds the TCP handshake.
    public static func connect(to endpoint: TransportEndpoint, timeout: Duration = .seconds(30)) async throws -> TCPSocket {
        try await connect(to: endpoint, timeout: timeout, reportingTo: nil)
    }

    /// Connects to `endpoint`, reporting the connection's end (a failed connect included) to `flow`:
    /// `flow` receives this socket's counters.
    static func connect(to endpoint: TransportEndpoint, timeout: Duration,
                        reportingTo flow: ((FlowCounters) -> FlowEntry)?, gatePass: EndpointGate.Pass? = nil) async throws -> TCPSocket {
        let family = endpoint.isIPv6 ? AF_INET6 : AF_INET
        let descriptor = Glibc.socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            gatePass?.release()
            throw SocketErrors.fromErrno(errno, operation: "socket")
        }
        let socket: TCPSocket
        do {
            socket = try TCPSocket(adopting: descriptor)
        } catch {
            gatePass?.release()
            throw error
        }
        socket.gatePass.withLock { $0 = gatePass }
        if let flow { socket.flowEntry.withLock { $0 = flow(socket.counters) } }
        var one: Int32 = 1
        _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let result = endpoint.withSockAddr { address, length in Glibc.connect(descriptor, address, length) }
        do {
            if result != 0 {
                let code = errno
                guard code == EINPROGRESS else { throw SocketErrors.fromErrno(code, operation: "connect") }
                try await withDeadline(timeout, expired: {
                    socket.abort(with: TransportError(code: .timedOut, kind: .timeout, message: "connect timed out"))
                }) {
                    try await socket.waitUntilConnected()
                }
            }
        } catch {
            socket.endFlow(error: error as? TransportError, endedByPeer: false)
            throw error
        }
        socket.counters.didConnect()
        return socket
    }

    private func endFlow(error: TransportError?, endedByPeer: Bool) {
        flowEntry.withLock { $0 }?.end(error: error, endedByPeer: endedByPeer)
        gatePass.withLock { $0 }?.release()
    }

    private func waitUntilConnected() async throws {
        while true {
            try throwIfTerminated()
            var pending: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &pending, &length) == 0 else {
                throw SocketErrors.fromErrno(errno, operation: "connect")
            }
            if pending != 0 && pending != EINPROGRESS { throw SocketErrors.fromErrno(pending, operation: "connect") }
            // A connected socket has a peer; until then keep waiting for writability.
            var storage = sockaddr_storage()
            var storageLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let connected = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(descriptor, $0, &storageLength) == 0 }
            }
            if connected { return }
            await waitWritable()
        }
    }

    /// Why the socket was aborted, if it was.
    public var terminationReason: TransportError? { terminalError.withLock { $0 } }

    private func throwIfTerminated() throws {
        if let error = terminalError.withLock({ $0 }) { throw error }
    }

    private func waitReadable() async {
        await withTaskCancellationHandler {
            await loop.waitReadable(descriptor)
        } onCancel: {
            abort(with: TransportError(code: .cancelled, kind: .cancelled, message: "the operation was cancelled"))
        }
    }

    private func waitWritable() async {
        await withTaskCancellationHandler {
            await loop.waitWritable(descriptor)
        } onCancel: {
            abort(with: TransportError(code: .cancelled, kind: .cancelled, message: "the operation was cancelled"))
        }
    }

    /// Reads up to `buffer.count` bytes; returns 0 at end of stream.
    public func read(into buffer: UnsafeMutableRawBufferPointer) async throws -> Int {
        while true {
            try throwIfTerminated()
            let count: Int
            do throws(SystemCallError) {
                count = try SystemCall.retrying("recv") { Glibc.recv(descriptor, buffer.baseAddress, buffer.count, 0) }
            } catch where error.number == EAGAIN || error.number == EWOULDBLOCK {
                await waitReadable()
                continue
            } catch {
                let failure = SocketErrors.fromErrno(error.number, operation: "recv")
                endFlow(error: failure, endedByPeer: false)
                throw failure
            }
            if count == 0 {
                try throwIfTerminated()
                endFlow(error: nil, endedByPeer: true)
            }
            counters.didRead(count)
            return count
        }
    }

    public func read(maximumCount: Int) async throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: maximumCount)
        var filled = 0
        while true {
            try throwIfTerminated()
            do throws(SystemCallError) {
                filled = try SystemCall.retrying("recv") { bytes.withUnsafeMutableBytes { Glibc.recv(descriptor, $0.baseAddress, maximumCount, 0) } }
            } catch where error.number == EAGAIN || error.number == EWOULDBLOCK {
                await waitReadable()
                continue
            } catch {
                let failure = SocketErrors.fromErrno(error.number, operation: "recv")
                endFlow(error: failure, endedByPeer: false)
                throw failure
            }
            if filled == 0 {
                try throwIfTerminated()
                endFlow(error: nil, endedByPeer: true)
            }
            counters.didRead(filled)
            break
        }
        bytes.removeLast(maximumCount - filled)
        return bytes
    }

    /// Writes every byte or throws.
    public func write(_ bytes: [UInt8]) async throws {
        var offset = 0
        while offset < bytes.count {
            try throwIfTerminated()
            do throws(SystemCallError) {
                let sent = try SystemCall.retrying("send") {
                    bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
                }
                offset += sent
                counters.didWrite(sent)
            } catch where error.number == EAGAIN || error.number == EWOULDBLOCK {
                await waitWritable()
            } catch {
                let failure = SocketErrors.fromErrno(error.number, operation: "send")
                endFlow(error: failure, endedByPeer: false)
                throw failure
            }
        }
    }

    /// The most pieces one `write(gathering:)` system call takes (Linux's IOV_MAX).
    private static let maximumPiecesPerCall = 1024

    /// Writes every byte of `pieces`, in order, or throws: one sendmsg for up to 1024 pieces, so
    /// bytes spread over a caller's buffer (obfs4's payloads between their frame headers) reach the
    /// kernel without being gathered into an array first. The pieces must stay valid and unchanged
    /// until this returns.
    public func write(gathering pieces: [UnsafeRawBufferPointer]) async throws {
        var index = 0    // the first piece not completely sent
        var offset = 0   // how much of it was sent
        var vectors: [iovec] = []
        vectors.reserveCapacity(min(pieces.count, Self.maximumPiecesPerCall))
        while true {
            vectors.removeAll(keepingCapacity: true)
            var next = index
            while next < pieces.count && vectors.count < Self.maximumPiecesPerCall {
                let skip = next == index ? offset : 0
                if let base = pieces[next].baseAddress, pieces[next].count > skip {
                    vectors.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: base + skip), iov_len: pieces[next].count - skip))
                }
                next += 1
            }
            if vectors.isEmpty { return }
            try throwIfTerminated()
            do throws(SystemCallError) {
                var sent = try SystemCall.retrying("sendmsg") {
                    vectors.withUnsafeMutableBufferPointer { vector in
                        var message = msghdr()
                        message.msg_iov = vector.baseAddress
                        message.msg_iovlen = vector.count
                        return Glibc.sendmsg(descriptor, &message, Int32(MSG_NOSIGNAL))
                    }
                }
                counters.didWrite(sent)
                while sent > 0 && index < pieces.count {
                    let remaining = pieces[index].count - offset
                    if sent >= remaining {
                        sent -= remaining
                        index += 1
                        offset = 0
                    } else {
                        offset += sent
                        sent = 0
                    }
                }
            } catch where error.number == EAGAIN || error.number == EWOULDBLOCK {
                await waitWritable()
            } catch {
                let failure = SocketErrors.fromErrno(error.number, operation: "sendmsg")
                endFlow(error: failure, endedByPeer: false)
                throw failure
            }
        }
    }

    /// Half-closes: the peer reads end of stream, reading continues.
    public func closeWrite() async {
        _ = Glibc.shutdown(descriptor, Int32(SHUT_WR))
    }

    /// Shuts the socket down; pending and later operations fail with `error`.
    public func abort(with error: TransportError) {
        let first = terminalError.withLock { current -> Bool in
            if current == nil { current = error; return true }
            return false
        }
        if first {
            _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR))
            loop.wakeAll(descriptor)
            endFlow(error: error, endedByPeer: false)
        }
    }

    public func close() {
        abort(with: SocketErrors.closedLocally)
    }
}

