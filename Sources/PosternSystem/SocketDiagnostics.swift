#if canImport(Glibc)
import Glibc
#endif

/// The kernel's word on TCP sockets, asked over netlink (NETLINK_SOCK_DIAG, the interface `ss`
/// uses): one socket named by its two ends, or the listening sockets of a family.
///
/// Not /proc/net/tcp: that table lists every socket of every account, TIME_WAIT included, and is
/// read and parsed whole; with about 100 000 sockets on the machine it costs a full parse per
/// question, and any cap on its size turns a busy machine into a refusal of everything. An exact
/// question costs the kernel one hash lookup and its answer is one fixed-size message; a listener
/// dump is filtered by state in the kernel, so connected and TIME_WAIT sockets never come back.
/// Every question has a deadline (``deadline``).
public enum SocketDiagnostics {
    /// Why a question could not be answered: netlink sock_diag is missing (gVisor, a seccomp
    /// filter), or the kernel's reply was not one we understand.
    public struct Unavailable: Error, Sendable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// How long one question may take, all replies included.
    public static let deadline: Duration = .seconds(2)

    /// The socket whose local end is `local` and whose remote end is `remote` (both IPv4 or both
    /// IPv6, 4 or 16 network-order bytes); nil when the kernel has none. The kernel answers an
    /// exact question with a listener on `local` when no connection matches: such an answer (and
    /// any that does not name exactly these ends) is nil here too.
    public static func socket(local: (address: [UInt8], port: UInt16),
                              remote: (address: [UInt8], port: UInt16)) throws(Unavailable) -> KernelTCPSocket? {
        guard local.address.count == remote.address.count, local.address.count == 4 || local.address.count == 16 else {
            throw Unavailable("the two ends are not of one address family")
        }
        let family = local.address.count == 4 ? AF_INET : AF_INET6
        let request = Self.request(family: family, states: allStates, flags: requestFlag,
                                   local: local, remote: remote)
        var found: KernelTCPSocket?
        try exchange(request, isDump: false) { socket in
            if found == nil, socket.localAddress == local.address, socket.localPort == local.port,
               socket.remoteAddress == remote.address, socket.remotePort == remote.port, !socket.isListening {
                found = socket
            }
        }
        return found
    }

    /// Every listening TCP socket of this network namespace, IPv4 and IPv6, that
    /// `keep` returns true for (only those are kept: the dump itself is not stored).
    public static func listeners(where keep: (KernelTCPSocket) -> Bool) throws(Unavailable) -> [KernelTCPSocket] {
        var kept: [KernelTCPSocket] = []
        let none: (address: [UInt8], port: UInt16) = ([UInt8](repeating: 0, count: 16), 0)
        for family in [AF_INET, AF_INET6] {
            let request = Self.request(family: family, states: 1 << UInt32(KernelTCPSocket.listening),
                                       flags: requestFlag | dumpFlags, local: none, remote: none)
            try exchange(request, isDump: true) { socket in
                if socket.isListening, keep(socket) { kept.append(socket) }
            }
        }
        return kept
    }

    // linux/netlink.h, linux/sock_diag.h, linux/inet_diag.h
    private static let netlinkSockDiag: Int32 = 4
    private static let sockDiagByFamily: UInt16 = 20
    private static let messageError: UInt16 = 2
    private static let messageDone: UInt16 = 3
    private static let requestFlag: UInt16 = 0x1
    private static let dumpFlags: UInt16 = 0x300
    private static let allStates: UInt32 = 0xFFFF_FFFF
    private static let headerSize = 16
    /// struct inet_diag_msg: family, state, timer, retrans, a 48-byte inet_diag_sockid, then
    /// expires, rqueue, wqueue, uid, inode (32 bits each).
    private static let diagnosisSize = 72
    private static let sequence: UInt32 = 1

    /// nlmsghdr + inet_diag_req_v2 (family, protocol, ext, pad, states, inet_diag_sockid). The
    /// cookie is INET_DIAG_NOCOOKIE: the ends alone name the socket.
    private static func request(family: Int32, states: UInt32, flags: UInt16,
                                local: (address: [UInt8], port: UInt16),
                                remote: (address: [UInt8], port: UInt16)) -> [UInt8] {
        var bytes: [UInt8] = []
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value) { bytes += $0 } }
        func appendAddress(_ address: [UInt8]) { bytes += address + [UInt8](repeating: 0, count: 16 - address.count) }
        append(UInt32(headerSize + 56))
        append(sockDiagByFamily)
        append(flags)
        append(sequence)
        append(UInt32(0))
        bytes += [UInt8(family), UInt8(IPPROTO_TCP), 0, 0]
        append(states)
        append(local.port.bigEndian)
        append(remote.port.bigEndian)
        appendAddress(local.address)
        appendAddress(remote.address)
        append(UInt32(0))
        append(UInt32.max)
        append(UInt32.max)
        return bytes
    }

    /// Sends `request` to the kernel and hands each socket of its reply to `body`, until the reply
    /// ends (a dump's NLMSG_DONE, or an exact question's one message or error) or ``deadline``.
    private static func exchange(_ request: [UInt8], isDump: Bool, _ body: (KernelTCPSocket) -> Void) throws(Unavailable) {
        let descriptor = Glibc.socket(AF_NETLINK, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), netlinkSockDiag)
        guard descriptor >= 0 else { throw Unavailable("netlink sock_diag cannot be opened (\(String(cString: strerror(errno))))") }
        defer { close(descriptor) }
        let end = ContinuousClock.now + deadline
        let sent = request.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
        guard sent == request.count else { throw Unavailable("netlink sock_diag refused the question (\(String(cString: strerror(errno))))") }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let left = end - ContinuousClock.now
            guard left > .zero else { throw Unavailable("the kernel did not answer within \(deadline)") }
            var timeout = timeval(tv_sec: Int(left.components.seconds),
                                  tv_usec: Int(max(1, left.components.attoseconds / 1_000_000_000_000)))
            _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            // struct sockaddr_nl: family, pad (16 bits each), then the sender's port id.
            var sender = sockaddr_storage()
            var senderLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &sender) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_TRUNC), $0, &senderLength)
                    }
                }
            }
            let senderPort = withUnsafeBytes(of: sender) { $0.loadUnaligned(fromByteOffset: 4, as: UInt32.self) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw Unavailable("no answer from netlink sock_diag (\(String(cString: strerror(errno))))") }
            guard count <= buffer.count else { throw Unavailable("a netlink reply was larger than \(buffer.count) bytes") }
            // Only the kernel (port 0) answers; anything else is not a reply to us.
            guard senderPort == 0 else { continue }
            if try parse(buffer[..<count], body) || !isDump { return }
        }
    }

    /// One datagram of netlink messages. True when it ends the reply (NLMSG_DONE or an error).
    private static func parse(_ datagram: ArraySlice<UInt8>, _ body: (KernelTCPSocket) -> Void) throws(Unavailable) -> Bool {
        var offset = datagram.startIndex
        while datagram.endIndex - offset >= headerSize {
            let (length, type, sequence) = datagram.withUnsafeBytes { bytes in
                let base = offset - datagram.startIndex
                return (Int(bytes.loadUnaligned(fromByteOffset: base, as: UInt32.self)),
                        bytes.loadUnaligned(fromByteOffset: base + 4, as: UInt16.self),
                        bytes.loadUnaligned(fromByteOffset: base + 8, as: UInt32.self))
            }
            guard length >= headerSize, length <= datagram.endIndex - offset else {
                throw Unavailable("a netlink message's length is out of its datagram")
            }
            let payload = datagram[(offset + headerSize)..<(offset + length)]
            offset += (length + 3) & ~3
            guard sequence == Self.sequence else { continue }
            switch type {
            case messageDone:
                return true
            case messageError:
                guard payload.count >= 4 else { throw Unavailable("a netlink error without its code") }
                let code = -payload.withUnsafeBytes { $0.loadUnaligned(as: Int32.self) }
                // ENOENT: no such socket, an answer; anything else says the question failed.
                guard code == 0 || code == ENOENT else {
                    throw Unavailable("netlink sock_diag failed (\(String(cString: strerror(code))))")
                }
                return true
            case sockDiagByFamily:
                guard payload.count >= diagnosisSize, let socket = KernelTCPSocket(diagnosis: payload) else {
                    throw Unavailable("a sock_diag message is too short")
                }
                body(socket)
            default:
                continue
            }
        }
        return false
    }
}

extension KernelTCPSocket {
    /// struct inet_diag_msg.
    init?(diagnosis bytes: ArraySlice<UInt8>) {
        let message = Array(bytes.prefix(72))
        guard message.count == 72 else { return nil }
        func word(_ offset: Int) -> UInt32 { message.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self) } }
        func port(_ offset: Int) -> UInt16 { UInt16(message[offset]) << 8 | UInt16(message[offset + 1]) }
        let length: Int
        switch Int32(message[0]) {
        case AF_INET: length = 4
        case AF_INET6: length = 16
        default: return nil
        }
        self.init(localAddress: Array(message[8..<(8 + length)]), localPort: port(4),
                  remoteAddress: Array(message[24..<(24 + length)]), remotePort: port(6),
                  state: message[1], uid: word(64), inode: UInt64(word(68)))
    }
}
