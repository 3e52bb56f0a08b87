#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PosternSystem
internal import CEpoll
import Synchronization

/// One epoll thread that wakes suspended socket operations.
///
/// Sockets are non-blocking and registered edge-triggered once. An operation first tries its
/// syscall; only on EAGAIN does it suspend, and it is resumed by the next readiness edge. A
/// readiness edge that arrives while nobody waits is remembered, so no wake-up can be lost between
/// the failed syscall and the suspension. One thread serves every socket, so hundreds of streams
/// cost no extra threads; the work itself runs on Swift's cooperative pool.
final class IOEventLoop: Sendable {
    static let shared = IOEventLoop()

    private struct Interest {
        var readReady = false
        var writeReady = false
        var readWaiter: CheckedContinuation<Void, Never>?
        var writeWaiter: CheckedContinuation<Void, Never>?
    }

    private let epollDescriptor: Int32
    private let interests = Mutex<[Int32: Interest]>([:])

    private init() {
        epollDescriptor = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(epollDescriptor >= 0, "epoll_create1 failed: errno \(errno)")
        let thread = Thread { [self] in self.runLoop() }
        thread.name = "postern-io"
        thread.start()
    }

    /// Registers a non-blocking descriptor. Must be balanced by `deregister` before `close`.
    func register(_ descriptor: Int32) throws(TransportError) {
        interests.withLock { $0[descriptor] = Interest() }
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue | EPOLLET.rawValue
        event.data.fd = descriptor
        if epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, descriptor, &event) != 0 {
            let code = errno
            _ = interests.withLock { $0.removeValue(forKey: descriptor) }
            throw SocketErrors.fromErrno(code, operation: "epoll_ctl")
        }
    }

    /// Removes the descriptor and wakes anyone still waiting on it (they will see the socket closed).
    func deregister(_ descriptor: Int32) {
        _ = epoll_ctl(epollDescriptor, EPOLL_CTL_DEL, descriptor, nil)
        let interest = interests.withLock { $0.removeValue(forKey: descriptor) }
        interest?.readWaiter?.resume()
        interest?.writeWaiter?.resume()
    }

    /// Wakes both waiters of a descriptor without deregistering it (used by `abort`).
    func wakeAll(_ descriptor: Int32) {
        let waiters = interests.withLock { table -> [CheckedContinuation<Void, Never>] in
            guard var interest = table[descriptor] else { return [] }
            let found = [interest.readWaiter, interest.writeWaiter].compactMap { $0 }
            interest.readWaiter = nil
            interest.writeWaiter = nil
            interest.readReady = true
            interest.writeReady = true
            table[descriptor] = interest
            return found
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Suspends until the descriptor has become readable (or writable) since the last wait.
    func waitReadable(_ descriptor: Int32) async { await wait(descriptor, forWrite: false) }
    func waitWritable(_ descriptor: Int32) async { await wait(descriptor, forWrite: true) }

    private func wait(_ descriptor: Int32, forWrite: Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = interests.withLock { table -> Bool in
                guard var interest = table[descriptor] else { return true }
                if forWrite {
                    if interest.writeReady { interest.writeReady = false; table[descriptor] = interest; return true }
                    precondition(interest.writeWaiter == nil, "two concurrent writers on one socket")
                    interest.writeWaiter = continuation
                } else {
                    if interest.readReady { interest.readReady = false; table[descriptor] = interest; return true }
                    precondition(interest.readWaiter == nil, "two concurrent readers on one socket")
                    interest.readWaiter = continuation
                }
                table[descriptor] = interest
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    private func dispatch(descriptor: Int32, events: UInt32) {
        let readable = events & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0
        let writable = events & (EPOLLOUT.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0
        let waiters = interests.withLock { table -> [CheckedContinuation<Void, Never>] in
            guard var interest = table[descriptor] else { return [] }
            var found: [CheckedContinuation<Void, Never>] = []
            if readable {
                if let waiter = interest.readWaiter { found.append(waiter); interest.readWaiter = nil } else { interest.readReady = true }
            }
            if writable {
                if let waiter = interest.writeWaiter { found.append(waiter); interest.writeWaiter = nil } else { interest.writeReady = true }
            }
            table[descriptor] = interest
            return found
        }
        for waiter in waiters { waiter.resume() }
    }

    private func runLoop() {
        let capacity = 256
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        while true {
            let count: Int32
            do {
                count = try SystemCall.retrying("epoll_wait") { epoll_wait(epollDescriptor, events, Int32(capacity), -1) }
            } catch {
                fatalError("epoll_wait failed: \(error)")
            }
            for index in 0..<Int(count) {
                dispatch(descriptor: events[index].data.fd, events: events[index].events)
            }
        }
    }
}
