import Foundation
import PosternSystem
import Synchronization

/// A control connection over the owning socket that tor_api hands us.
///
/// Replies come back in the order commands were sent (control-spec §2.1), so pending commands
/// wait in a FIFO. A dedicated thread blocks on read(); asynchronous events (650) go to `events`.
/// Closing the connection makes tor exit (it is the owning controller).
public final class ControlConnection: Sendable {
    private struct State {
        var pending: [CheckedContinuation<ControlReply, any Error>] = []
        var closedReason: TorCoreError?
    }

    private let fileDescriptor: Int32
    private let state = Mutex(State())
    private let writeLock = Mutex(())
    private let eventContinuation: AsyncStream<ControlReply>.Continuation
    /// Set when the reader thread has closed the descriptor. Until then its number is still ours;
    /// a new core started earlier could be handed the same number and lose it to our close().
    private let descriptorClosed = OneShot<Void>()
    /// Asynchronous events, in arrival order. Finishes when the connection closes.
    public let events: AsyncStream<ControlReply>

    /// Takes ownership of `fileDescriptor`.
    init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
        (events, eventContinuation) = AsyncStream.makeStream(of: ControlReply.self, bufferingPolicy: .bufferingNewest(1024))
        let thread = Thread { [self] in readLoop() }
        thread.name = "tor-control-reader"
        thread.start()
    }

    /// Sends one command line (without CRLF) and waits for its reply. A reply whose status is not
    /// 2xx becomes a `.commandRejected` error carrying tor's message.
    @discardableResult
    public func send(_ command: String) async throws -> ControlReply {
        precondition(!command.contains("\r") && !command.contains("\n"), "control commands are single lines")
        let reply: ControlReply = try await withCheckedThrowingContinuation { continuation in
            // Enqueue and write under one lock so FIFO order matches wire order.
            writeLock.withLock { _ in
                let closed = state.withLock { state -> TorCoreError? in
                    if let reason = state.closedReason { return reason }
                    state.pending.append(continuation)
                    return nil
                }
                if let closed {
                    continuation.resume(throwing: closed)
                    return
                }
                if !writeAll(Array((command + "\r\n").utf8)) {
                    close(reason: TorCoreError(.controlClosed, "control socket write failed: \(String(cString: strerror(errno)))"))
                }
            }
        }
        guard reply.isSuccess else {
            throw TorCoreError(.commandRejected, "tor refused \(command.split(separator: " ").first ?? ""): \(reply.status) \(reply.message)")
        }
        return reply
    }

    /// Shuts the socket down; tor sees its owning controller go away and exits.
    public func close() {
        close(reason: TorCoreError(.controlClosed, "control connection closed"))
    }

    /// Closes the connection and waits until its descriptor is released.
    public func closeAndWait() async {
        close()
        await descriptorClosed.wait()
    }

    // MARK: Commands

    public func getInfo(_ keys: [String]) async throws -> [String: String] {
        let reply = try await send("GETINFO " + keys.joined(separator: " "))
        var values: [String: String] = [:]
        for line in reply.lines {
            guard let equals = line.text.firstIndex(of: "=") else { continue }
            let key = String(line.text[..<equals])
            if let data = line.data {
                values[key] = data.joined(separator: "\n")
            } else {
                values[key] = String(line.text[line.text.index(after: equals)...])
            }
        }
        return values
    }

    /// SETCONF with ordered key/value pairs; a nil value resets that key to its default. Repeating a
    /// key sets a list (e.g. several `Bridge` lines).
    public func setConf(_ options: [(key: String, value: String?)]) async throws {
        let arguments = options.map { option in
            option.value.map { "\(option.key)=\(ControlSyntax.quoted($0))" } ?? option.key
        }
        try await send("SETCONF " + arguments.joined(separator: " "))
    }

    public func resetConf(_ keys: [String]) async throws {
        try await send("RESETCONF " + keys.joined(separator: " "))
    }

    public func setEvents(_ events: [String]) async throws {
        try await send("SETEVENTS " + events.joined(separator: " "))
    }

    public func signal(_ name: String) async throws {
        try await send("SIGNAL \(name)")
    }

    // MARK: Internals

    private func writeAll(_ bytes: [UInt8]) -> Bool {
        (try? SystemCall.writeAll(fileDescriptor, bytes)) != nil
    }

    private func close(reason: TorCoreError) {
        let (pending, wasOpen) = state.withLock { state -> ([CheckedContinuation<ControlReply, any Error>], Bool) in
            let wasOpen = state.closedReason == nil
            if wasOpen { state.closedReason = reason }
            defer { state.pending = [] }
            return (state.pending, wasOpen)
        }
        if wasOpen {
            // shutdown() wakes the reader thread; it closes the descriptor when it leaves.
            _ = Foundation.shutdown(fileDescriptor, Int32(SHUT_RDWR))
        }
        for continuation in pending { continuation.resume(throwing: reason) }
        eventContinuation.finish()
    }

    private func readLoop() {
        var parser = ControlReplyParser()
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        var reason = TorCoreError(.controlClosed, "tor closed the control connection")
        reading: while true {
            let count = (try? SystemCall.retrying("read") {
                chunk.withUnsafeMutableBytes { Foundation.read(fileDescriptor, $0.baseAddress, $0.count) }
            }) ?? -1
            if count <= 0 { break }
            buffer.append(contentsOf: chunk[0..<count])
            while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                var end = newline
                if end > 0 && buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                let line = String(decoding: buffer[0..<end], as: UTF8.self)
                buffer.removeSubrange(0...newline)
                do {
                    guard let reply = try parser.feed(line) else { continue }
                    if reply.isAsynchronousEvent {
                        eventContinuation.yield(reply)
                    } else {
                        let waiter = state.withLock { state in
                            state.pending.isEmpty ? nil : state.pending.removeFirst()
                        }
                        waiter?.resume(returning: reply)
                    }
                } catch {
                    // A malformed reply means we no longer know which command it belongs to.
                    reason = error
                    break reading
                }
            }
            if buffer.count > ControlReplyParser.maximumLineBytes {
                reason = TorCoreError(.controlProtocol, "malformed control reply: a line over \(ControlReplyParser.maximumLineBytes) bytes")
                break reading
            }
        }
        close(reason: reason)
        Foundation.close(fileDescriptor)
        descriptorClosed.fulfil(())
    }
}
