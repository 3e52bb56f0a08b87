internal import CEpoll
import Glibc
import PosternSystem

/// Whether an accepted loopback connection was opened by this process. TCP has no peer
/// credentials (SO_PEERCRED is for Unix sockets), but both ends of a loopback connection are in
/// this network namespace: the client's end is the socket whose local end is our peer and whose
/// remote end is us, the kernel names its uid and inode (``SocketDiagnostics``, one exact question
/// with a deadline, so a stranger's connect costs one hash lookup, whatever else the machine
/// holds), and the inode says whether one of our descriptors holds it. A port or an address alone
/// proves nothing: any local account can connect from anywhere.
enum LoopbackClientOrigin {
    enum Verdict: Equatable {
        case thisProcess
        /// Found, and another account's or another process's (or already closed by its opener).
        case stranger
        /// The kernel could not be asked: the mechanism does not work here.
        case unknowable(String)
    }

    /// Anything but ``Verdict/thisProcess`` is refused by the caller.
    static func verdict(_ descriptor: Int32) -> Verdict { verdict(descriptor, heldBy: 0) }

    /// The same question for a connection that process `pid` (0: this one) must have opened, e.g.
    /// the external plugin whose egress gate this is; ``Verdict/thisProcess`` then means "that
    /// process's". The plugin runs under our uid, which is checked first.
    static func verdict(_ descriptor: Int32, heldBy pid: Int32) -> Verdict {
        // The PT listeners bind 127.0.0.1 only: an end that is not IPv4 is nobody we know.
        guard let local = SocketEnd.local(of: descriptor), let peer = SocketEnd.peer(of: descriptor),
              local.address.count == 4, peer.address.count == 4 else {
            return .stranger
        }
        let client: KernelTCPSocket?
        do {
            client = try SocketDiagnostics.socket(local: peer, remote: local)
        } catch {
            return .unknowable(error.description)
        }
        guard let client else { return .stranger }
        // The uid first: a stranger's connection is refused without a walk through our descriptors.
        return client.uid == UInt32(geteuid()) && ProcessDescriptors.holdsSocket(pid: pid, inode: client.inode) ? .thisProcess : .stranger
    }

    /// Proves once, before a listener relies on it, that this process's own loopback connection is
    /// recognised: a listener of its own on 127.0.0.1 (the address every PT listener binds), a
    /// connection to it, the check on the accepted end. Where netlink sock_diag or /proc/self/fd is
    /// unavailable (gVisor, a seccomp filter, a hardened /proc) every connection, tor's included,
    /// would be refused one by one with a warning that does not say why; this names the cause once.
    /// A separate listener, so that no probe connection reaches the real one's accept loop.
    static func selfCheck(recognise: (Int32) -> Verdict = verdict) throws(TransportError) {
        func failure(_ why: String) -> TransportError {
            TransportError(code: .clientCheckUnavailable, kind: .internal,
                           message: "cannot tell this process's loopback connections from other local accounts' (\(why)); an in-process transport listener is not started without that check, as any local account could use it. Netlink sock_diag and /proc/self/fd must be available")
        }
        let flags = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let listener = socket(AF_INET, flags, 0), client = socket(AF_INET, flags, 0)
        defer { close(listener); close(client) }
        guard listener >= 0, client >= 0 else { throw failure("no socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let connected = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 1) == 0 && getsockname(listener, $0, &length) == 0
                    && connect(client, $0, length) == 0
            }
        }
        guard connected else { throw failure("a loopback connection to itself failed: \(String(cString: strerror(errno)))") }
        var queued = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        var ready: Int32
        repeat { ready = poll(&queued, 1, 2000) } while ready < 0 && errno == EINTR
        guard ready > 0 else { throw failure("its own connection did not reach the accept queue") }
        let accepted = cepoll_accept_cloexec_nonblock(listener)
        guard accepted >= 0 else { throw failure("accept failed: \(String(cString: strerror(errno)))") }
        defer { close(accepted) }
        switch recognise(accepted) {
        case .thisProcess: return
        case .stranger: throw failure("its own connection was not found as its own")
        case .unknowable(let why): throw failure(why)
        }
    }
}
