#if canImport(Glibc)
internal import CEpoll
import PosternSystem
import Glibc
#endif
import Synchronization

/// A TCP listener bound to a loopback address only.
public final class LoopbackListener: @unchecked Sendable {
    private let socket: TCPSocket
    /// The bound port (the kernel's choice when 0 was requested).
    public let port: UInt16

    /// Binds `127.0.0.1:port` (port 0 picks a free one).
    public convenience init(port: UInt16 = 0, backlog: Int32 = 256) throws(TransportError) {
        try self.init(bindingTo: TransportEndpoint(loopbackPort: port), backlog: backlog)
    }

    /// Binds another IPv4 loopback address (127.0.0.0/8), e.g. for a peer that must not share
    /// 127.0.0.1 with its clients. A non-loopback endpoint is refused.
    public convenience init(loopbackAddress endpoint: TransportEndpoint, backlog: Int32 = 256) throws(TransportError) {
        guard endpoint.isLoopback, !endpoint.isIPv6 else {
            throw TransportError(code: .invalidArguments, kind: .invalidInput, message: "a loopback listener needs a 127.0.0.0/8 address")
        }
        try self.init(bindingTo: endpoint, backlog: backlog)
    }

    private init(bindingTo endpoint: TransportEndpoint, backlog: Int32) throws(TransportError) {
        let descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SocketErrors.fromErrno(errno, operation: "socket") }
        let socket = try TCPSocket(adopting: descriptor)
        var one: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = endpoint.withSockAddr { address, length in Glibc.bind(descriptor, address, length) }
        guard bound == 0 else { throw SocketErrors.fromErrno(errno, operation: "bind") }
        guard Glibc.listen(descriptor, backlog) == 0 else { throw SocketErrors.fromErrno(errno, operation: "listen") }
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else { throw SocketErrors.fromErrno(errno, operation: "getsockname") }
        self.socket = socket
        self.port = UInt16(bigEndian: address.sin_port)
        self.boundEndpoint = (try? TransportEndpoint(ipv4: endpoint.addressBytes, port: port)) ?? TransportEndpoint(loopbackPort: port)
    }

    private let boundEndpoint: TransportEndpoint

    /// The address to give clients, e.g. `127.0.0.1:40123`.
    public var endpoint: TransportEndpoint { boundEndpoint }

    /// Waits for the next connection. Throws once the listener is closed.
    public func accept() async throws -> TCPSocket {
        while true {
            if let reason = socket.terminationReason { throw reason }
            // accept4 sets close-on-exec atomically: tor and Foundation spawn child processes
            // from other threads, which must not inherit a connection.
            let descriptor: Int32, code: Int32
            do throws(SystemCallError) {
                descriptor = try SystemCall.retrying("accept") { cepoll_accept_cloexec_nonblock(socket.descriptor) }
                code = 0
            } catch {
                descriptor = -1
                code = error.number
            }
            if descriptor >= 0 {
                var one: Int32 = 1
                _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return try TCPSocket(adopting: descriptor)
            }
            switch code {
            case EAGAIN, EWOULDBLOCK:
                try await socket.waitForAcceptable()
            case ECONNABORTED, EPROTO:
                continue
            case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                // Out of descriptors: back off rather than spin; the connection stays queued.
                try await Task.sleep(for: .milliseconds(50))
            default:
                throw SocketErrors.fromErrno(code, operation: "accept")
            }
        }
    }

    /// Stops accepting; a pending `accept` throws.
    public func close() { socket.close() }
}

extension TCPSocket {
    func waitForAcceptable() async throws {
        if let reason = terminationReason { throw reason }
        await withTaskCancellationHandler {
            await IOEventLoop.shared.waitReadable(descriptor)
        } onCancel: {
            abort(with: TransportError(code: .cancelled, kind: .cancelled, message: "the operation was cancelled"))
        }
    }
}
