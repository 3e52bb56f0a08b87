#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import TransportBase

/// How the url host becomes addresses to dial, as the reference client does it: the system
/// resolver (getaddrinfo: /etc/hosts, then the DNS servers of resolv.conf), OUTSIDE Tor, then
/// every loopback, unspecified, multicast, link-local and private address dropped
/// (docs/SECURITY.md says what this lookup reveals).
enum AddressResolution {
    /// The addresses of `host` in the resolver's order, filtered, with `port`. IP literals are
    /// not looked up. Throws when the lookup fails, passes `timeout`, or leaves nothing.
    static func resolve(host: String, port: UInt16, timeout: Duration) async throws(TransportError) -> [TransportEndpoint] {
        let candidates: [TransportEndpoint]
        if let literal = literal(host, port: port) {
            candidates = [literal]
        } else {
            candidates = try await systemLookup(host, port: port, timeout: timeout)
        }
        let usable = filter(candidates)
        guard !usable.isEmpty else {
            throw TransportError(code: .webtunnelNoUsableAddress, kind: .network,
                                 message: "the url host has no public address (loopback, private, link-local and multicast addresses are not dialled)")
        }
        return usable
    }

    static func literal(_ host: String, port: UInt16) -> TransportEndpoint? {
        if let bytes = WebtunnelOptions.ipv4Bytes(host) { return try? TransportEndpoint(ipv4: bytes, port: port) }
        if host.contains(":") { return try? TransportEndpoint(parsing: "[\(host)]:\(port)") }
        return nil
    }

    /// Go's net.IP checks, as getAddressesFromHostname applies them. IPv4-mapped IPv6 addresses
    /// are judged (and dialled) as the IPv4 address they carry.
    static func filter(_ endpoints: [TransportEndpoint]) -> [TransportEndpoint] {
        var seen = Set<TransportEndpoint>()
        var result: [TransportEndpoint] = []
        for endpoint in endpoints {
            var candidate = endpoint
            let bytes = endpoint.addressBytes
            if bytes.count == 16, bytes.prefix(10).allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF,
               let mapped = try? TransportEndpoint(ipv4: Array(bytes.suffix(4)), port: endpoint.port) {
                candidate = mapped
            }
            guard isDialable(candidate.addressBytes), seen.insert(candidate).inserted else { continue }
            result.append(candidate)
        }
        return result
    }

    static func isDialable(_ bytes: [UInt8]) -> Bool {
        if bytes.count == 4 {
            let loopback = bytes[0] == 127
            let unspecified = bytes == [0, 0, 0, 0]
            let multicast = bytes[0] >= 224 && bytes[0] <= 239
            let linkLocal = bytes[0] == 169 && bytes[1] == 254
            let privateUse = bytes[0] == 10 || (bytes[0] == 172 && bytes[1] & 0xF0 == 16) || (bytes[0] == 192 && bytes[1] == 168)
            return !(loopback || unspecified || multicast || linkLocal || privateUse)
        }
        guard bytes.count == 16 else { return false }
        let loopback = bytes == [UInt8](repeating: 0, count: 15) + [1]
        let unspecified = bytes.allSatisfy { $0 == 0 }
        let multicast = bytes[0] == 0xFF
        let linkLocal = bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80
        let privateUse = bytes[0] & 0xFE == 0xFC
        return !(loopback || unspecified || multicast || linkLocal || privateUse)
    }

    /// getaddrinfo blocks and cannot be cancelled, so it runs on a thread of its own and the
    /// caller stops waiting at `timeout` (the thread finishes on its own and its answer is dropped).
    private static func systemLookup(_ host: String, port: UInt16, timeout: Duration) async throws(TransportError) -> [TransportEndpoint] {
        let rendezvous = LookupRendezvous()
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<[TransportEndpoint], TransportError>, Never>) in
            rendezvous.wait(continuation)
            let thread = Thread { rendezvous.finish(lookup(host, port: port)) }
            thread.start()
            rendezvous.startDeadline(Task {
                guard (try? await Task.sleep(for: timeout)) != nil else { return }
                rendezvous.finish(.failure(TransportError(code: .webtunnelResolveFailed, kind: .timeout,
                                                          message: "the system resolver did not answer for the url host within \(timeout)")))
            })
        }
        rendezvous.cancelDeadline()
        return try result.get()
    }

    private static func lookup(_ host: String, port: UInt16) -> Result<[TransportEndpoint], TransportError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0 else {
            let reason = String(cString: gai_strerror(status))
            return .failure(TransportError(code: .webtunnelResolveFailed, kind: .network,
                                           message: "the system resolver could not resolve the url host: \(reason)"))
        }
        defer { freeaddrinfo(list) }
        var endpoints: [TransportEndpoint] = []
        var entry = list
        while let current = entry {
            if let address = current.pointee.ai_addr {
                if current.pointee.ai_family == AF_INET {
                    let bytes = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                        withUnsafeBytes(of: pointer.pointee.sin_addr) { Array($0) }
                    }
                    if let endpoint = try? TransportEndpoint(ipv4: bytes, port: port) { endpoints.append(endpoint) }
                } else if current.pointee.ai_family == AF_INET6 {
                    let bytes = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                        withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
                    }
                    if let endpoint = try? TransportEndpoint(ipv6: bytes, port: port) { endpoints.append(endpoint) }
                }
            }
            entry = current.pointee.ai_next
        }
        return .success(endpoints)
    }
}

/// The first of the lookup thread and the deadline resumes the waiting dial; the other is dropped.
private final class LookupRendezvous: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result<[TransportEndpoint], TransportError>, Never>?
        var finished = false
        var deadline: Task<Void, Never>?
    }
    private let state = Mutex(State())

    func wait(_ continuation: CheckedContinuation<Result<[TransportEndpoint], TransportError>, Never>) {
        state.withLock { $0.continuation = continuation }
    }

    func startDeadline(_ task: Task<Void, Never>) {
        state.withLock { $0.deadline = task }
    }

    func cancelDeadline() {
        state.withLock { $0.deadline }?.cancel()
    }

    func finish(_ result: Result<[TransportEndpoint], TransportError>) {
        let continuation = state.withLock { state -> CheckedContinuation<Result<[TransportEndpoint], TransportError>, Never>? in
            guard !state.finished else { return nil }
            state.finished = true
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: result)
    }
}
