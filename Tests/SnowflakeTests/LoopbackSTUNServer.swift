#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// A STUN server on 127.0.0.1 for tests: it records every datagram it receives and answers each
/// Binding request as a server behind a NAT would, with 127.0.0.2 (a loopback address no socket of
/// the test listens on) and the sender's port as the mapped address, so that libnice gathers a
/// server-reflexive candidate. A request without the RFC 5389 magic cookie (RFC 3489's form) gets
/// MAPPED-ADDRESS, one with it XOR-MAPPED-ADDRESS. At most `datagramLimit` datagrams are kept.
/// Its thread holds it until `stop()`, which every test calls.
final class LoopbackSTUNServer: Sendable {
    static let mappedAddress: [UInt8] = [127, 0, 0, 2]
    static let datagramLimit = 256
    let port: UInt16
    private let socket: Int32
    private let datagrams = Mutex<[[UInt8]]>([])
    private let stopped = Mutex(false)
    private let exited = DispatchSemaphore(value: 0)

    init() throws {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        socket = fd
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in serve() }
        thread.name = "loopback-stun"
        thread.start()
    }

    /// Every datagram received so far, in order.
    var received: [[UInt8]] { datagrams.withLock { $0 } }

    func stop() {
        let first = stopped.withLock { stopped -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        exited.wait()
        close(socket)
    }

    private func serve() {
        defer { exited.signal() }
        var buffer = [UInt8](repeating: 0, count: 1500)
        while !stopped.withLock({ $0 }) {
            var from = sockaddr_in()
            var fromLength = socklen_t(MemoryLayout<sockaddr_in>.size)
            let count = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &from) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(socket, bytes.baseAddress, bytes.count, 0, $0, &fromLength)
                    }
                }
            }
            guard count > 0 else { continue }
            let datagram = Array(buffer.prefix(count))
            datagrams.withLock { if $0.count < Self.datagramLimit { $0.append(datagram) } }
            guard let request = STUNMessageView(datagram), request.type == 0x0001 else { continue }
            var answer = Array(datagram.prefix(20))
            answer[0] = 0x01
            answer[1] = 0x01
            answer[2] = 0
            answer[3] = 12
            let port = UInt16(bigEndian: from.sin_port)
            if request.hasMagicCookie {
                let xPort = port ^ 0x2112
                let cookie: [UInt8] = [0x21, 0x12, 0xa4, 0x42]
                answer += [0x00, 0x20, 0x00, 0x08, 0x00, 0x01, UInt8(xPort >> 8), UInt8(xPort & 0xff)]
                answer += zip(Self.mappedAddress, cookie).map { $0 ^ $1 }
            } else {
                answer += [0x00, 0x01, 0x00, 0x08, 0x00, 0x01, UInt8(port >> 8), UInt8(port & 0xff)] + Self.mappedAddress
            }
            _ = answer.withUnsafeBytes { bytes in
                withUnsafePointer(to: &from) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(socket, bytes.baseAddress, bytes.count, 0, $0, fromLength)
                    }
                }
            }
        }
    }
}

/// The parts of a STUN message (RFC 8489 section 5) a test compares: type, magic cookie, and the
/// attribute types in order. Nil when the header or an attribute's length does not fit.
struct STUNMessageView {
    let type: UInt16
    let hasMagicCookie: Bool
    let attributeTypes: [UInt16]

    init?(_ bytes: [UInt8]) {
        guard bytes.count >= 20, bytes[0] & 0xc0 == 0 else { return nil }
        let length = Int(bytes[2]) << 8 | Int(bytes[3])
        guard length % 4 == 0, 20 + length == bytes.count else { return nil }
        type = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        hasMagicCookie = bytes[4...7].elementsEqual([0x21, 0x12, 0xa4, 0x42])
        var types: [UInt16] = []
        var offset = 20
        while offset + 4 <= bytes.count {
            types.append(UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1]))
            let valueLength = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            offset += 4 + (valueLength + 3) / 4 * 4
        }
        guard offset == bytes.count else { return nil }
        attributeTypes = types
    }
}
