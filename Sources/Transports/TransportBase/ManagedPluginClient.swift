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
/// - Egress: a plugin whose transports all connect to the bridge's own address (obfs4 and its
///   kin) gets a ``PluginEgressGate`` as `TOR_PT_PROXY`, so that its pt-spec listener, open to every
///   local account, reaches only the destinations Postern permitted (``permitEgress(to:)``). A
///   plugin that refuses or ignores `TOR_PT_PROXY` is started again without it (when the user has no
///   proxy of their own) and stays open: ``egressNotice`` says so.
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

    /// The destinations the plugin may reach and its process, for its egress gate; kept across
    /// restarts of the plugin.
    private let egressAdmission: SocksAdmission
    private let egressProcess = SocksAdmission.ChildProcessReference()

    /// Whether this plugin is given an egress gate: all its transports connect to the SOCKS target.
    public var narrowsEgress: Bool {
        definition.names.allSatisfy { PluginEgressGate.bridgeAddressedTransports.contains($0.rawValue) }
    }

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
        egressAdmission = .restricted(to: [], clients: .childProcess(egressProcess))
    }

    /// Lets the plugin's next connections reach `endpoint` (a bridge about to be dialled through it).
    /// Without it, a plugin with an egress gate cannot connect there.
    public func permitEgress(to endpoint: TransportEndpoint) {
        egressAdmission.permit(SocksAdmission.Bridge(endpoint: endpoint, arguments: TransportArguments()))
    }

    /// Set while the plugin runs without the egress gate its transports would get (it refused or
    /// ignored `TOR_PT_PROXY`): what that means, for the user. Never names a bridge.
    public var egressNotice: String? {
        if case .running(let running) = state.withLock({ $0 }) { return running.egressNotice }
        return nil
    }

    /// ``egressNotice``, once per start of the plugin (for a dial to report without repeating it).
    public func takeEgressNotice() -> String? {
        guard case .running(let running) = state.withLock({ $0 }), let notice = running.egressNotice else { return nil }
        return running.noticeTaken.exchange(true, ordering: .relaxed) ? nil : notice
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
                let egress = narrowsEgress ? Egress(admission: egressAdmission, process: egressProcess) : nil
                let task = Task { try await Self.start(definition, proxy: proxy, egress: egress, timeout: timeout) }
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

    /// What a start needs to give the plugin an egress gate.
    private struct Egress: Sendable {
        let admission: SocksAdmission
        let process: SocksAdmission.ChildProcessReference
    }

    private static func start(_ definition: Definition, proxy: UpstreamProxy?, egress: Egress?, timeout: Duration) async throws -> Running {
        guard let egress else { return try await launch(definition, proxy: proxy, gate: nil, egress: nil, timeout: timeout) }
        let gate = try PluginEgressGate(admission: egress.admission, upstream: proxy)
        do {
            return try await launch(definition, proxy: gate.proxy, gate: gate, egress: egress, timeout: timeout)
        } catch let refusal as ProxyNotAccepted {
            gate.stop()
            // The user's own proxy cannot be dropped: without it the plugin would not go through it.
            guard proxy == nil else { throw fail(definition, refusal.reason, code: .pluginProtocol) }
            let running = try await launch(definition, proxy: nil, gate: nil, egress: nil, timeout: timeout)
            running.egressNotice = "\(definition.label) does not accept an upstream proxy (TOR_PT_PROXY), so its SOCKS listener on 127.0.0.1 can take other local accounts' connections to any address"
            return running
        } catch {
            gate.stop()
            throw error
        }
    }

    /// The plugin refused or ignored the egress gate as its upstream proxy.
    private struct ProxyNotAccepted: Error {
        let reason: String
    }

    private static func launch(_ definition: Definition, proxy: UpstreamProxy?, gate: PluginEgressGate?, egress: Egress?,
                               timeout: Duration) async throws -> Running {
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
        egress?.process.adopt(child.pid)
        let running = Running(pid: child.pid, stdinDescriptor: child.stdinDescriptor, gate: gate)
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
        case .proxyNotAccepted(let reason):
            running.terminate(grace: .zero)
            await running.waitUntilReaped()
            if gate != nil { throw ProxyNotAccepted(reason: reason) }
            throw fail(definition, reason, code: .pluginProtocol)
        }
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
