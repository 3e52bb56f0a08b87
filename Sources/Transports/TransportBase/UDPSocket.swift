#if canImport(Glibc)
// cepoll.h includes <sys/socket.h>: when CEpoll's clang module is built first it owns SOCK_DGRAM
// and friends, which are then visible only to files that import it (as in Socket.swift).
internal import CEpoll
import PosternSystem
import Glibc
#endif
import Synchronization

extension TransportError.Code {
    /// The kernel refused to send a datagram this large (EMSGSIZE).
    public static let datagramTooLarge = Self(rawValue: "datagram-too-large")
}

/// A non-blocking UDP socket connected to one peer (a DNS resolver, for dnstt's `udp=` path).
///
/// Connected, so the kernel itself drops datagrams from any other source address or port: a host
/// on the path that races the resolver with forged answers must also forge the resolver's address.
/// (The reference dnstt client parses a datagram from any source, docs/plans/DNSTT.md section 2.)
/// The local port is chosen by the kernel inside `connect`, so no datagram can be queued before
/// the peer is fixed.
///
/// Receiving: one datagram per call into a buffer of `receiveCapacity` bytes. A longer datagram is
/// seen through MSG_TRUNC, dropped whole and counted in `truncatedDatagrams`; it is never handed
/// on cut short. Every receive ends at its deadline, on task cancellation or on `close`, and
/// neither a deadline nor a cancellation closes the socket. One receive at a time: a second
/// concurrent one fails at once with a typed error.
///
/// Sending never waits: a datagram the kernel cannot queue now (EAGAIN, ENOBUFS: the send buffer
/// is full) is dropped and counted in `droppedSends`, as a full queue on the path would drop it;
/// the protocols above (KCP) retransmit. So any number of tasks may send at once.
///
/// The descriptor is released only in `deinit`, so a concurrent syscall can never hit a reused
/// descriptor number (as TCPSocket).
public final class UDPSocket: @unchecked Sendable {
    /// The largest datagram `receive` delivers. dnstt's answers are at most about 1232 bytes
    /// (the server's default -mtu, spec section 6.4); 4096 leaves room for resolvers that
    /// advertise larger EDNS buffers, and bounds what one datagram can make us hold.
    public static let receiveCapacity = 4096

    let descriptor: Int32
    private let loop: IOEventLoop
    /// The peer the socket is connected to.
    public let peer: TransportEndpoint
    /// Set once by `abort`/`close`; every later operation throws it.
    private let terminalError = Mutex<TransportError?>(nil)
    /// Whether a receive is in progress (IOEventLoop allows one waiting reader per descriptor).
    private let receiving = Atomic<Bool>(false)
    private let truncated = Atomic<Int>(0)
    private let dropped = Atomic<Int>(0)
    /// Bytes and times of this socket, as TCPSocket's.
    public let counters = FlowCounters()

    private init(adopting descriptor: Int32, peer: TransportEndpoint, loop: IOEventLoop) throws(TransportError) {
        self.descriptor = descriptor
        self.peer = peer
        self.loop = loop
        // As in TCPSocket: no close on failure here, deinit runs and closes the descriptor.
        try loop.register(descriptor)
    }

    deinit {
        loop.deregister(descriptor)
        Glibc.close(descriptor)
    }

    /// A socket connected to `peer`. No packet is sent: UDP's connect only fixes the peer address.
    public static func connect(to peer: TransportEndpoint) throws(TransportError) -> UDPSocket {
        let family = peer.isIPv6 ? AF_INET6 : AF_INET
        let descriptor = Glibc.socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SocketErrors.fromErrno(errno, operation: "socket") }
        let socket = try UDPSocket(adopting: descriptor, peer: peer, loop: .shared)
        do throws(SystemCallError) {
            try SystemCall.retrying("connect") { peer.withSockAddr { Glibc.connect(descriptor, $0, $1) } }
        } catch {
            throw SocketErrors.fromErrno(error.number, operation: "connect")
        }
        socket.counters.didConnect()
        return socket
    }

    /// The local address and port the kernel chose.
    public var localEndpoint: TransportEndpoint? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) == 0 }
        }
        guard named else { return nil }
        let family = Int32(storage.ss_family)
        return withUnsafeBytes(of: storage) { raw -> TransportEndpoint? in
            if family == AF_INET {
                let address = raw.load(as: sockaddr_in.self)
                return try? TransportEndpoint(ipv4: withUnsafeBytes(of: address.sin_addr) { Array($0) }, port: UInt16(bigEndian: address.sin_port))
            }
            if family == AF_INET6 {
                let address = raw.load(as: sockaddr_in6.self)
                return try? TransportEndpoint(ipv6: withUnsafeBytes(of: address.sin6_addr) { Array($0) }, port: UInt16(bigEndian: address.sin6_port))
            }
            return nil
        }
    }

    /// Datagrams longer than `receiveCapacity` that were dropped.
    public var truncatedDatagrams: Int { truncated.load(ordering: .relaxed) }
    /// Datagrams `send` dropped because the kernel's send buffer was full.
    public var droppedSends: Int { dropped.load(ordering: .relaxed) }
    /// Why the socket was closed or aborted, if it was.
    public var terminationReason: TransportError? { terminalError.withLock { $0 } }

    private func throwIfTerminated() throws(TransportError) {
        if let error = terminalError.withLock({ $0 }) { throw error }
    }

    /// Sends `datagram` as one datagram. Returns false when the kernel's send buffer was full and
    /// the datagram was dropped (counted in `droppedSends`). Errors the kernel reports for the
    /// peer (ICMP port or host unreachable for an earlier datagram) are thrown and leave the
    /// socket usable.
    @discardableResult
    public func send(_ datagram: [UInt8]) throws(TransportError) -> Bool {
        try throwIfTerminated()
        do throws(SystemCallError) {
            let sent = try SystemCall.retrying("send") {
                datagram.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            counters.didWrite(sent)
            return true
        } catch where error.number == EAGAIN || error.number == EWOULDBLOCK || error.number == ENOBUFS {
            dropped.wrappingAdd(1, ordering: .relaxed)
            return false
        } catch where error.number == EMSGSIZE {
            throw TransportError(code: .datagramTooLarge, kind: .invalidInput,
                                 message: "send: a datagram of \(datagram.count) bytes is too large to send")
        } catch {
            throw SocketErrors.fromErrno(error.number, operation: "send")
        }
    }

    /// Waits at most `timeout` for the next datagram; see `receive(deadline:)`.
    public func receive(timeout: Duration) async throws(TransportError) -> [UInt8] {
        try await receive(deadline: .now + timeout)
    }

    /// The next datagram from the peer (at most `receiveCapacity` bytes; an empty datagram is
    /// delivered as empty). Throws `timedOut` when `deadline` passes first (nil: no deadline, the
    /// caller's task cancellation or `close` ends the wait), `cancelled` when the task is
    /// cancelled, the termination error after `close`/`abort`, and the kernel's errors for the
    /// peer (such as `connectionRefused` after an ICMP port unreachable), which leave the socket
    /// usable.
    public func receive(deadline: ContinuousClock.Instant? = nil) async throws(TransportError) -> [UInt8] {
        guard receiving.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            throw TransportError(code: .socketFailure, kind: .internal, message: "receive: another receive on this UDP socket is in progress")
        }
        defer { receiving.store(false, ordering: .releasing) }
        let expiry = ReceiveExpiry()
        // The timer only raises a flag and wakes the reader: the reader, not the timer, decides to
        // stop, so a datagram and the deadline arriving together cannot lose the datagram.
        let timer: Task<Void, Never>? = deadline.map { deadline in
            Task { [loop, descriptor] in
                guard (try? await Task.sleep(until: deadline, clock: .continuous)) != nil else { return }
                expiry.set()
                loop.wakeAll(descriptor)
            }
        }
        defer { timer?.cancel() }
        var buffer = [UInt8](repeating: 0, count: Self.receiveCapacity)
        while true {
            try throwIfTerminated()
            let count: Int
            do throws(SystemCallError) {
                // MSG_TRUNC: recv returns the datagram's real length even when it did not fit (udp(7)).
                count = try SystemCall.retrying("recv") {
                    buffer.withUnsafeMutableBytes { Glibc.recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_TRUNC)) }
                }
            } catch where error.number == EAGAIN || error.number == EWOULDBLOCK {
                if Task.isCancelled {
                    throw TransportError(code: .cancelled, kind: .cancelled, message: "the receive was cancelled")
                }
                if expiry.isSet {
                    throw TransportError(code: .timedOut, kind: .timeout, message: "no datagram arrived from the peer before the deadline")
                }
                await withTaskCancellationHandler {
                    await loop.waitReadable(descriptor)
                } onCancel: {
                    // The reader sees Task.isCancelled on its next round; waking it is enough.
                    loop.wakeAll(descriptor)
                }
                continue
            } catch {
                throw SocketErrors.fromErrno(error.number, operation: "recv")
            }
            // A socket shut down by `close` between the check above and recv may read as an empty
            // datagram: that is the close, not the peer's.
            if count == 0 { try throwIfTerminated() }
            if count > Self.receiveCapacity {
                truncated.wrappingAdd(1, ordering: .relaxed)
                continue
            }
            counters.didRead(count)
            buffer.removeLast(Self.receiveCapacity - count)
            return buffer
        }
    }

    /// Shuts the socket down; a pending receive and every later operation fail with `error`.
    public func abort(with error: TransportError) {
        let first = terminalError.withLock { current -> Bool in
            if current == nil { current = error; return true }
            return false
        }
        if first {
            // shutdown on a connected UDP socket marks it shut; the wake below is what ends a
            // pending receive, which then sees the terminal error.
            _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR))
            loop.wakeAll(descriptor)
        }
    }

    public func close() {
        abort(with: SocketErrors.closedLocally)
    }
}

/// Whether one receive's deadline passed.
private final class ReceiveExpiry: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
