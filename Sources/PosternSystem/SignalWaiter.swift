#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Synchronization

/// Catches some POSIX signals through Dispatch rather than a raw handler (which may call almost
/// nothing safely): SIGINT and SIGTERM to stop, SIGHUP to reload settings. One task may `wait()`
/// for the first of them; a poller may instead `consume()` whether any arrived since it last asked.
public final class SignalWaiter: Sendable {
    private let stream: AsyncStream<Int32>
    private let received = Mutex(0)
    nonisolated(unsafe) private let sources: [DispatchSourceSignal]

    public init(signals: [Int32]) {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        self.stream = stream
        var sources: [DispatchSourceSignal] = []
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            sources.append(source)
        }
        self.sources = sources
        for source in sources {
            source.setEventHandler { [self] in
                self.received.withLock { $0 += 1 }
                continuation.yield(Int32(source.handle))
            }
            source.resume()
        }
    }

    /// Waits for the first signal. For a single waiter: the stream ends if that waiter is cancelled.
    public func wait() async {
        for await _ in stream { return }
    }

    /// True when a signal arrived since the last call.
    public func consume() -> Bool {
        received.withLock { count in
            defer { count = 0 }
            return count > 0
        }
    }
}
