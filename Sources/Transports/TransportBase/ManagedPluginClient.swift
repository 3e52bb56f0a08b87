#if canImport(Glibc)
internal import CSpawn
import Glibc
import PosternLinkSpec
#endif
import Foundation
import PosternSystem
import Synchronization

/// An external pt-spec managed client (obfs4proxy, snowflake-client, ...) that Postern runs the way
/// tor would (pt-spec §3–§4, §7), so that its transports can be dialled by Postern itself: by the
/// in-process listener tor uses, and by health checks and A/B trials that have no tor.
///
/// - Started on first use, once for all its names; concurrent callers share one start. A start
///   that fails is remembered for `retryDelay`, so a caller retrying in a loop (tor) does not fork a
///   process per attempt.
/// - Environment: only `PATH`, `HOME`, `LANG`, `TMPDIR` of ours plus the `TOR_PT_*` variables; proxy
///   variables of the environment never reach it (`TOR_PT_PROXY` is the only way it gets one).
/// - `start` has a deadline (`startTimeout`): a plugin that hangs, never says `CMETHODS DONE`,
///   prints garbage or exits is killed (its whole process group) and the error names the plugin.
/// - Orphans: stdin is a pipe only we hold (`TOR_PT_EXIT_ON_STDIN_CLOSE=1`: the plugin exits when
///   it reads EOF, which the kernel delivers when postern dies, even by SIGKILL); the child also has
///   `PR_SET_PDEATHSIG` = SIGKILL (see CSpawn), set from a thread that lives as long as the process,
///   so a plugin that ignores stdin dies with postern too. When the plugin's main process ends,
///   whatever is left in its process group is killed before it is reaped.
public final class ManagedPluginClient: Sendable {
    /// How long a start keeps trying while exec answers ETXTBSY (executable open for writing),
    /// 10 ms apart at first, doubling up to 200 ms.
    static let busyExecutableWait: Duration = .seconds(2)

    public struct Definition: Sendable, Hashable {
        public let names: [TransportName]
        public let executable: String
        public let arguments: [String]
        /// `TOR_PT_STATE_LOCATION` (created 0700 when missing, refused when another user's, made
        /// private when ours; see PrivateDirectory; a trailing `/` is added).
        public let stateLocation: String

        public init(names: [TransportName], executable: String, arguments: [String], stateLocation: String) {
            self.names = names
            self.executable = executable
            self.arguments = arguments
            self.stateLocation = stateLocation.hasSuffix("/") ? stateLocation : stateLocation + "/"
        }

        /// How errors name the plugin: "plugin obfs4 (/usr/bin/obfs4proxy)". Never a bridge.
        public var label: String { "plugin \(names.map(\.rawValue).joined(separator: ",")) (\(executable))" }
    }

    public let definition: Definition
    public let startTimeout: Duration
    public let retryDelay: Duration

    private enum State {
        case idle
        case starting(Task<Running, any Error>)
        case running(Running)
        case failed(TransportError, ContinuousClock.Instant)
    }
    private let state = Mutex<State>(.idle)

    public init(_ definition: Definition, startTimeout: Duration = .seconds(20), retryDelay: Duration = .seconds(5)) {
        self.definition = definition
        self.startTimeout = startTimeout
        self.retryDelay = retryDelay
    }

    deinit {
        if case .running(let running) = state.withLock({ $0 }) { running.terminate(grace: .zero) }
    }

    /// The plugin's SOCKS5 listener for `name`, starting the plugin if it is not running.
    public func endpoint(for name: TransportName, proxy: UpstreamProxy? = nil) async throws -> TransportEndpoint {
        let running = try await ensureRunning(proxy: proxy)
        if let endpoint = running.methods[name] { return endpoint }
        let reason = running.errors[name] ?? "it did not offer this transport"
        throw TransportError(code: .pluginMethodMissing, kind: .invalidInput, message: "\(definition.label) cannot serve \(name): \(reason)")
    }

    /// The process ID while the plugin runs (for tests and status).
    public var processID: Int32? {
        if case .running(let running) = state.withLock({ $0 }), !running.hasExited { return running.pid }
        return nil
    }

    private func ensureRunning(proxy: UpstreamProxy?) async throws -> Running {
        let task: Task<Running, any Error> = try state.withLock { state in
            switch state {
            case .running(let running) where !running.hasExited:
                return Task { running }
            case .starting(let task):
                return task
            case .failed(let error, let at) where ContinuousClock.now - at < retryDelay:
                throw error
            default:
                let definition = definition, timeout = startTimeout
                let task = Task { try await Self.start(definition, proxy: proxy, timeout: timeout) }
                state = .starting(task)
                return task
            }
        }
        do {
            let running = try await task.value
            state.withLock { if case .starting = $0 { $0 = .running(running) } }
            return running
        } catch {
            let failure = error as? TransportError
                ?? TransportError(code: .pluginFailed, kind: .internal, message: "\(definition.label) failed to start")
            state.withLock { if case .starting = $0 { $0 = .failed(failure, .now) } }
            throw failure
        }
    }

    /// Closes the plugin's stdin and sends SIGTERM (pt-spec §7); SIGKILL to its process group after
    /// `grace`. Waits until it has been reaped.
    public func stop(grace: Duration = .seconds(2)) async {
        let current = state.withLock { state -> State in
            defer { state = .idle }
            return state
        }
        switch current {
        case .running(let running):
            running.terminate(grace: grace)
            await running.waitUntilReaped()
        case .starting(let task):
            task.cancel()
            if let running = try? await task.value {
                running.terminate(grace: grace)
                await running.waitUntilReaped()
            }
        default:
            break
        }
    }

    // MARK: Starting

    private static func fail(_ definition: Definition, _ reason: String, code: TransportError.Code = .pluginFailed) -> TransportError {
        TransportError(code: code, kind: code == .pluginTimedOut ? .timeout : .internal, message: "\(definition.label) \(reason)")
    }

    private static func start(_ definition: Definition, proxy: UpstreamProxy?, timeout: Duration) async throws -> Running {
        var info = stat()
        guard stat(definition.executable, &info) == 0 else {
            throw fail(definition, "cannot be started: \(String(cString: strerror(errno)))", code: .pluginNotFound)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG, access(definition.executable, X_OK) == 0 else {
            throw fail(definition, "cannot be started: it is not an executable file", code: .pluginNotFound)
        }
        do throws(PrivateDirectory.Failure) {
            try PrivateDirectory.prepare(String(definition.stateLocation.dropLast()))
        } catch {
            throw fail(definition, "has no private state directory: \(error)")
        }

        var environment: [String] = []
        let ours = ProcessInfo.processInfo.environment
        for key in ["PATH", "HOME", "LANG", "TMPDIR"] {
            if let value = ours[key], !value.utf8.contains(0) { environment.append("\(key)=\(value)") }
        }
        if !environment.contains(where: { $0.hasPrefix("PATH=") }) { environment.append("PATH=/usr/bin:/bin") }
        environment += [
            "TOR_PT_MANAGED_TRANSPORT_VER=1",
            "TOR_PT_CLIENT_TRANSPORTS=\(definition.names.map(\.rawValue).joined(separator: ","))",
            "TOR_PT_STATE_LOCATION=\(definition.stateLocation)",
            "TOR_PT_EXIT_ON_STDIN_CLOSE=1",
        ]
        if let proxy { environment.append("TOR_PT_PROXY=\(proxy.description)") }

        // ETXTBSY is transient: the executable is open for writing somewhere, typically because it
        // was just written and another thread of this process forked in between (the child holds the
        // descriptor until its own exec). Linux has no way to wait for that, so a few short retries.
        let busyUntil = ContinuousClock.now + Self.busyExecutableWait
        var pause = Duration.milliseconds(10)
        var child: ForkThread.Child
        while true {
            child = try await ForkThread.shared.spawn(executable: definition.executable,
                                                      arguments: [definition.executable] + definition.arguments,
                                                      environment: environment)
            guard child.execErrno == ETXTBSY, ContinuousClock.now + pause < busyUntil else { break }
            let failed = Running(pid: child.pid, stdinDescriptor: child.stdinDescriptor)
            Glibc.close(child.stdoutDescriptor)
            failed.terminate(grace: .zero)
            await failed.waitUntilReaped()
            try? await Task.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(200))
        }
        let running = Running(pid: child.pid, stdinDescriptor: child.stdinDescriptor)
        if let code = child.execErrno {
            Glibc.close(child.stdoutDescriptor)
            running.terminate(grace: .zero)
            await running.waitUntilReaped()
            throw fail(definition, "cannot be started: \(String(cString: strerror(code)))", code: .pluginNotFound)
        }
        let handshake = ManagedClientHandshake(requested: definition.names, proxyRequested: proxy != nil)
        let outcome = await running.configure(stdout: child.stdoutDescriptor, handshake: handshake, timeout: timeout)
        switch outcome {
        case .configured(let methods, let errors):
            guard !methods.isEmpty else {
                running.terminate(grace: .zero)
                await running.waitUntilReaped()
                let reasons = errors.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "; ")
                throw fail(definition, "offers none of its transports (\(reasons))", code: .pluginMethodMissing)
            }
            running.methods = methods
            running.errors = errors
            return running
        case .failed(let reason, let code):
            running.terminate(grace: .zero)
            await running.waitUntilReaped()
            throw fail(definition, reason, code: code)
        }
    }

    // MARK: A running plugin

    final class Running: @unchecked Sendable {
        let pid: Int32
        private let stdinDescriptor: Mutex<Int32>
        private let exit = Mutex<(status: Int32?, waiters: [CheckedContinuation<Void, Never>])>((nil, []))
        // Written once by `start` before the value is shared.
        nonisolated(unsafe) var methods: [TransportName: TransportEndpoint] = [:]
        nonisolated(unsafe) var errors: [TransportName: String] = [:]

        init(pid: Int32, stdinDescriptor: Int32) {
            self.pid = pid
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

private func describeExit(_ status: Int32?) -> String {
    guard let status else { return "it closed its output" }
    let signal = status & 0x7F
    if signal == 0 { return "exit status \((status >> 8) & 0xFF)" }
    return "killed by signal \(signal)"
}

/// The thread every plugin is forked from. It never ends: `PR_SET_PDEATHSIG` fires when the
/// *thread* that forked the child exits, so forking from a pool thread that the runtime may retire
/// would kill a healthy plugin.
final class ForkThread: @unchecked Sendable {
    static let shared = ForkThread()

    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []

    private init() {
        let thread = Thread { [self] in
            while true {
                condition.lock()
                while jobs.isEmpty { condition.wait() }
                let job = jobs.removeFirst()
                condition.unlock()
                job()
            }
        }
        thread.name = "postern-plugin-fork"
        thread.start()
    }

    struct Child: Sendable {
        let pid: Int32
        let stdinDescriptor: Int32
        let stdoutDescriptor: Int32
        /// Set when exec failed in the child.
        let execErrno: Int32?
    }

    func spawn(executable: String, arguments: [String], environment: [String]) async throws -> Child {
        try await withCheckedThrowingContinuation { continuation in
            condition.lock()
            jobs.append {
                continuation.resume(with: Result { try Self.forkAndExec(executable: executable, arguments: arguments, environment: environment) })
            }
            condition.signal()
            condition.unlock()
        }
    }

    private static func pipeDescriptors() throws -> (read: Int32, write: Int32) {
        var descriptors: [Int32] = [-1, -1]
        guard cspawn_pipe_cloexec(&descriptors) == 0 else {
            throw TransportError(code: .pluginFailed, kind: .internal, message: "cannot create a pipe: \(String(cString: strerror(errno)))")
        }
        return (descriptors[0], descriptors[1])
    }

    private static func forkAndExec(executable: String, arguments: [String], environment: [String]) throws -> Child {
        let input = try pipeDescriptors()
        let output = try pipeDescriptors()
        let report = try pipeDescriptors()
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer {
            Glibc.close(input.read)
            Glibc.close(output.write)
            Glibc.close(report.read)
            if null >= 0 { Glibc.close(null) }
        }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        let pid = argv.withUnsafeBufferPointer { argvBuffer in
            envp.withUnsafeBufferPointer { envpBuffer in
                cspawn_managed_child(executable, argvBuffer.baseAddress, envpBuffer.baseAddress, input.read, output.write,
                                     null >= 0 ? null : output.write, report.write, getpid())
            }
        }
        Glibc.close(report.write)
        guard pid > 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(input.write)
            Glibc.close(output.read)
            throw TransportError(code: .pluginFailed, kind: .internal, message: "cannot fork: \(reason)")
        }
        // exec closes the report pipe (EOF, nothing written) or the child writes its errno first.
        var code: Int32 = 0
        let received = (try? SystemCall.retrying("read") {
            withUnsafeMutableBytes(of: &code) { Glibc.read(report.read, $0.baseAddress, $0.count) }
        }) ?? 0
        return Child(pid: pid, stdinDescriptor: input.write, stdoutDescriptor: output.read,
                     execErrno: received == MemoryLayout<Int32>.size ? code : nil)
    }
}

extension TransportError.Code {
    public static let pluginNotFound = Self(rawValue: "plugin-not-found")
    public static let pluginFailed = Self(rawValue: "plugin-failed")
    public static let pluginExited = Self(rawValue: "plugin-exited")
    public static let pluginProtocol = Self(rawValue: "plugin-protocol")
    public static let pluginTimedOut = Self(rawValue: "plugin-timed-out")
    public static let pluginMethodMissing = Self(rawValue: "plugin-method-missing")
}
