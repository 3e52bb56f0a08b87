#if canImport(Glibc)
internal import CSpawn
import Glibc
#endif
import Foundation
import PosternSystem
import Synchronization

/// A started plugin: its process, its stdin (pt-spec's shutdown signal), its reaper thread and its
/// configuration output, and the egress gate that serves only it.
extension ManagedPluginClient {
    final class Running: @unchecked Sendable {
        let pid: Int32
        private let stdinDescriptor: Mutex<Int32>
        private let exit = Mutex<(status: Int32?, waiters: [CheckedContinuation<Void, Never>])>((nil, []))
        // Written once by `start` before the value is shared.
        nonisolated(unsafe) var methods: [TransportName: TransportEndpoint] = [:]
        nonisolated(unsafe) var errors: [TransportName: String] = [:]
        nonisolated(unsafe) var egressNotice: String?
        let noticeTaken = Atomic(false)
        /// Stopped when the plugin has ended: it serves no one else.
        private let gate: PluginEgressGate?

        init(pid: Int32, stdinDescriptor: Int32, gate: PluginEgressGate? = nil) {
            self.pid = pid
            self.gate = gate
            self.stdinDescriptor = Mutex(stdinDescriptor)
            let thread = Thread { [self] in reap() }
            thread.name = "postern-plugin-reaper"
            thread.start()
        }

        var hasExited: Bool { exit.withLock { $0.status != nil } }
        var exitStatus: Int32? { exit.withLock { $0.status } }

        /// Blocks (on its own thread) until the plugin ends; kills what is left of its process group
        /// while the plugin is still a zombie (so the group ID cannot have been reused), then reaps.
        private func reap() {
            _ = try? SystemCall.retrying("waitid") { cspawn_wait_exited_without_reaping(pid) }
            kill(-pid, SIGKILL)
            var status: Int32 = 0
            _ = try? SystemCall.retrying("waitpid") { waitpid(pid, &status, 0) }
            closeStdin()
            gate?.stop()
            let waiters = exit.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.status = status
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }

        func waitUntilReaped() async {
            await withCheckedContinuation { continuation in
                let done = exit.withLock { state -> Bool in
                    if state.status != nil { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if done { continuation.resume() }
            }
        }

        private func closeStdin() {
            stdinDescriptor.withLock { descriptor in
                if descriptor >= 0 { Glibc.close(descriptor) }
                descriptor = -1
            }
        }

        /// pt-spec §7: stdin EOF and SIGTERM; after `grace`, SIGKILL to the whole group.
        func terminate(grace: Duration) {
            closeStdin()
            guard !hasExited else { return }
            if grace > .zero {
                kill(pid, SIGTERM)
                let pid = pid
                Task { [self] in
                    try? await Task.sleep(for: grace)
                    if !hasExited { kill(-pid, SIGKILL) }
                }
            } else {
                kill(-pid, SIGKILL)
            }
        }

        enum Outcome: Sendable {
            case configured([TransportName: TransportEndpoint], [TransportName: String])
            case failed(String, TransportError.Code)
            case proxyNotAccepted(String)
        }

        /// Reads stdout on its own thread: the handshake until it finishes, then (so a chatty plugin
        /// never blocks on a full pipe) everything until EOF, discarded. The wait has a deadline.
        func configure(stdout descriptor: Int32, handshake: ManagedClientHandshake, timeout: Duration) async -> Outcome {
            let result = Mutex<(outcome: Outcome?, continuation: CheckedContinuation<Outcome, Never>?)>((nil, nil))
            @Sendable func finish(_ outcome: Outcome) {
                let continuation = result.withLock { state -> CheckedContinuation<Outcome, Never>? in
                    guard state.outcome == nil else { return nil }
                    state.outcome = outcome
                    defer { state.continuation = nil }
                    return state.continuation
                }
                continuation?.resume(returning: outcome)
            }
            let reader = Thread { [self] in
                var handshake = handshake
                var line: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                var finished = false
                while true {
                    let count = (try? SystemCall.retrying("read") {
                        buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
                    }) ?? -1
                    if count <= 0 { break }
                    guard !finished else { continue }
                    for byte in buffer[0..<count] where !finished {
                        guard byte == 0x0A else {
                            // Over-long lines are cut here, so memory stays bounded; the handshake rejects them.
                            if line.count <= ManagedClientHandshake.maximumLineBytes { line.append(byte) }
                            continue
                        }
                        switch handshake.consume(line) {
                        case .needMore: break
                        case .configured(let methods, let errors):
                            finished = true
                            finish(.configured(methods, errors))
                        case .failed(let reason):
                            finished = true
                            finish(.failed(reason, .pluginProtocol))
                        case .proxyNotAccepted(let reason):
                            finished = true
                            finish(.proxyNotAccepted(reason))
                        }
                        line.removeAll(keepingCapacity: true)
                    }
                    if !finished && line.count > ManagedClientHandshake.maximumLineBytes {
                        finished = true
                        finish(.failed("printed a line longer than \(ManagedClientHandshake.maximumLineBytes) bytes", .pluginProtocol))
                    }
                }
                Glibc.close(descriptor)
                if !finished {
                    // EOF before CMETHODS DONE: the plugin exited (or closed stdout). Give the reaper a
                    // moment to learn the status so the message can say how it ended.
                    var waited = 0
                    while !hasExited && waited < 20 { usleep(10_000); waited += 1 }
                    finish(.failed("exited before CMETHODS DONE (\(describeExit(exitStatus)))", .pluginExited))
                }
            }
            reader.name = "postern-plugin-stdout"
            reader.start()
            let timer = Task {
                try? await Task.sleep(for: timeout)
                guard !Task.isCancelled else { return }
                finish(.failed("did not finish configuring within \(timeout) (no CMETHODS DONE); it was stopped", .pluginTimedOut))
            }
            defer { timer.cancel() }
            return await withCheckedContinuation { continuation in
                let ready = result.withLock { state -> Outcome? in
                    if let outcome = state.outcome { return outcome }
                    state.continuation = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}

fileprivate func describeExit(_ status: Int32?) -> String {
    guard let status else { return "it closed its output" }
    let signal = status & 0x7F
    if signal == 0 { return "exit status \((status >> 8) & 0xFF)" }
    return "killed by signal \(signal)"
}
