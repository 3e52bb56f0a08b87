#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PosternSystem
import Synchronization

extension TransportError.Code {
    /// The system resolver failed, did not answer in time, or the lookup was cancelled.
    public static let hostLookupFailed = Self(rawValue: "host-lookup-failed")
}

/// The system's host lookup (getaddrinfo: /etc/hosts, then the DNS servers of resolv.conf), for
/// the transports whose bridge line names a host rather than an address (webtunnel's `url=`,
/// dnstt's DoH URL and `dot=`). It runs OUTSIDE Tor; docs/SECURITY.md says what it reveals. Callers
/// apply their own filters to the answer (webtunnel drops non-public addresses).
public enum HostLookup {
    /// The addresses of `host`, in the resolver's order, with `port`. `label` names the host in
    /// error messages (such as "the url host"), so the name itself never reaches an error.
    ///
    /// Throws `hostLookupFailed`: kind `network` when the resolver fails, `timeout` when it has
    /// not answered within `timeout`, `cancelled` when the task is cancelled. An empty answer is
    /// returned as empty.
    public static func addresses(of host: String, port: UInt16, timeout: Duration,
                                 label: String) async throws(TransportError) -> [TransportEndpoint] {
        let rendezvous = LookupRendezvous()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<[TransportEndpoint], TransportError>, Never>) in
                rendezvous.wait(continuation)
                // getaddrinfo blocks and cannot be cancelled, so it runs on a thread of its own and
                // the caller stops waiting at `timeout` or on cancellation (the thread finishes on
                // its own and its answer is dropped).
                let thread = Thread { rendezvous.finish(lookup(host, port: port, label: label)) }
                thread.start()
                rendezvous.startDeadline(Task {
                    guard (try? await Task.sleep(for: timeout)) != nil else { return }
                    rendezvous.finish(.failure(TransportError(code: .hostLookupFailed, kind: .timeout,
                                                              message: "the system resolver did not answer for \(label) within \(timeout)")))
                })
            }
        } onCancel: {
            rendezvous.finish(.failure(TransportError(code: .hostLookupFailed, kind: .cancelled,
                                                      message: "the lookup of \(label) was cancelled")))
        }
        rendezvous.cancelDeadline()
        return try result.get()
    }

    private static func lookup(_ host: String, port: UInt16, label: String) -> Result<[TransportEndpoint], TransportError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        // One socket type, so each address comes once rather than once per type.
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0 else {
            let reason = String(cString: gai_strerror(status))
            return .failure(TransportError(code: .hostLookupFailed, kind: .network,
                                           message: "the system resolver could not resolve \(label): \(reason)"))
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

/// The first of the lookup thread, the deadline and cancellation resumes the waiting caller; the
/// others are dropped. Cancellation can come before the continuation is stored, so a result that
/// finds no continuation is kept and handed over when it arrives.
private final class LookupRendezvous: Sendable {
    typealias Outcome = Result<[TransportEndpoint], TransportError>
    private struct State {
        var continuation: CheckedContinuation<Outcome, Never>?
        var early: Outcome?
        var finished = false
        var deadline: Task<Void, Never>?
    }
    private let state = Mutex(State())

    func wait(_ continuation: CheckedContinuation<Outcome, Never>) {
        let early = state.withLock { state -> Outcome? in
            if let early = state.early { state.early = nil; return early }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    func startDeadline(_ task: Task<Void, Never>) {
        let finished = state.withLock { state -> Bool in
            state.deadline = task
            return state.finished
        }
        if finished { task.cancel() }
    }

    func cancelDeadline() {
        state.withLock { $0.deadline }?.cancel()
    }

    func finish(_ result: Outcome) {
        let continuation = state.withLock { state -> CheckedContinuation<Outcome, Never>? in
            guard !state.finished else { return nil }
            state.finished = true
            guard let continuation = state.continuation else {
                state.early = result
                return nil
            }
            state.continuation = nil
            return continuation
        }
        continuation?.resume(returning: result)
    }
}
