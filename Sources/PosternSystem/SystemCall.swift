#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A system call that failed: which call, and the errno it left.
///
/// Callers turn it into their own module's error (with the reason in their words); `number` is
/// there to branch on (`EAGAIN`, `ENOENT`, ...).
public struct SystemCallError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The call's name, e.g. "read".
    public let call: String
    /// errno as the call left it.
    public let number: Int32

    public init(call: String, number: Int32) {
        self.call = call
        self.number = number
    }

    /// strerror's sentence for `number`.
    public var reason: String { String(cString: strerror(number)) }
    public var description: String { "\(call): \(reason)" }
}

/// The one place that knows that a blocking call may fail with EINTR and must simply be called again.
public enum SystemCall {
    /// Calls `body` again while it returns -1 with errno EINTR; returns its result, or throws the
    /// errno of any other failure (-1) as a ``SystemCallError``.
    @discardableResult
    public static func retrying<Result: FixedWidthInteger & SignedInteger>(
        _ call: String, _ body: () -> Result
    ) throws(SystemCallError) -> Result {
        while true {
            let result = body()
            if result != -1 { return result }
            let number = errno
            if number == EINTR { continue }
            throw SystemCallError(call: call, number: number)
        }
    }

    /// Writes all of `bytes` to `descriptor` with write(2), however many calls it takes.
    public static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemCallError) {
        try transferAll(bytes, "write") { write(descriptor, $0, $1) }
    }

    public static func writeAll(_ descriptor: Int32, _ bytes: some Collection<UInt8>) throws(SystemCallError) {
        let contiguous = Array(bytes)
        // withUnsafeBytes rethrows as `any Error`; the failure is carried out as a value instead.
        let failure = contiguous.withUnsafeBytes { raw -> SystemCallError? in
            do throws(SystemCallError) { try writeAll(descriptor, raw); return nil } catch { return error }
        }
        if let failure { throw failure }
    }

    /// Sends all of `bytes` on a blocking socket with send(2) and MSG_NOSIGNAL (a closed peer is an
    /// EPIPE error, never a SIGPIPE).
    public static func sendAll(_ descriptor: Int32, _ bytes: some Collection<UInt8>) throws(SystemCallError) {
        let contiguous = Array(bytes)
        let failure = contiguous.withUnsafeBytes { raw -> SystemCallError? in
            do throws(SystemCallError) { try transferAll(raw, "send") { send(descriptor, $0, $1, Int32(MSG_NOSIGNAL)) }; return nil } catch { return error }
        }
        if let failure { throw failure }
    }

    /// Reads from `descriptor` until end of file, or until more than `maximumCount` bytes have
    /// arrived (the result is then longer than `maximumCount`, so the caller can refuse it by
    /// length without reading an unbounded input).
    public static func readAll(_ descriptor: Int32, maximumCount: Int) throws(SystemCallError) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while bytes.count <= maximumCount {
            let count = try retrying("read") { buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) } }
            if count == 0 { break }
            bytes += buffer[0..<count]
        }
        return bytes
    }

    private static func transferAll(
        _ bytes: UnsafeRawBufferPointer, _ call: String, _ transfer: (UnsafeRawPointer, Int) -> Int
    ) throws(SystemCallError) {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let done = offset
            offset += try retrying(call) { transfer(base + done, bytes.count - done) }
        }
    }
}
