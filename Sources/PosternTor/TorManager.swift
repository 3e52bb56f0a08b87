import Foundation

/// Owns the embedded tor core: start, bootstrap tracking, stall detection, readiness, restart and
/// shutdown. tor_api allows one core per process, so a second manager cannot start while another
/// one's core runs.
public actor TorManager {
    private var status = TorStatus()
    private var configuration: TorConfiguration?
    /// The size of tor's log when the current start began (nil: no log yet).
    private var logSizeAtStart: Int64?
    private var core: EmbeddedTorThread?
    /// Writes the current core's tor.log, scrubbed (nil with --unsafe-logging: tor writes it).
    private var logRelay: TorLogRelay?
    private var control: ControlConnection?
    private var eventTask: Task<Void, Never>?
    private var watchdogTask: Task<Void, Never>?
    /// Increments on every attempt so that an old watchdog or event loop cannot touch a new attempt.
    private var attempt = 0
    /// Lifecycle operations (start, shutdown, restart) run one after another in request order:
    /// a start requested while a shutdown is in flight runs after it finishes.
    private var lifecycleTail: Task<Void, Never>?
    private var subscribers: [UUID: AsyncStream<TorStatus>.Continuation] = [:]
    private var signalSubscribers: [UUID: AsyncStream<ConnectionSignal>.Continuation] = [:]

    public init() {}

    deinit {
        // The owning control socket going away makes tor exit: a dropped manager never leaves an
        // orphaned core running.
        control?.close()
    }

    /// The version of the linked tor core.
    public nonisolated static var torVersion: String { EmbeddedTorThread.providerVersion }

    public var currentStatus: TorStatus { status }

    /// A stream of status snapshots, starting with the current one. Slow consumers see only the
    /// latest value, unless `everyChange` asks for each snapshot (a recorder of every bootstrap
    /// milestone; it must keep up, as nothing is dropped).
    public func statusUpdates(everyChange: Bool = false) -> AsyncStream<TorStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: TorStatus.self,
                                                            bufferingPolicy: everyChange ? .unbounded : .bufferingNewest(1))
        let id = UUID()
        subscribers[id] = continuation
        continuation.yield(status)
        continuation.onTermination = { [weak self] _ in
            Task { await self?.unsubscribe(id) }
        }
        return stream
    }

    private func unsubscribe(_ id: UUID) { subscribers[id] = nil }

    /// Failure signals from tor's control events from now on: OR connections that failed for a
    /// reason about the route (`ORCONN ... FAILED|CLOSED REASON=...`) and bootstrap warnings with
    /// a REASON (connection assist's judge counts them). At most 256 are buffered.
    public func connectionSignals() -> AsyncStream<ConnectionSignal> {
        let (stream, continuation) = AsyncStream.makeStream(of: ConnectionSignal.self, bufferingPolicy: .bufferingNewest(256))
        let id = UUID()
        signalSubscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.unsubscribeSignals(id) }
        }
        return stream
    }

    private func unsubscribeSignals(_ id: UUID) { signalSubscribers[id] = nil }

    private func publish(_ signal: ConnectionSignal) {
        for continuation in signalSubscribers.values { continuation.yield(signal) }
    }

    // MARK: Lifecycle

    public func start(_ configuration: TorConfiguration) async throws {
        try await serialized { try await self.startNow(configuration) }
    }

    public func shutdown() async {
        try? await serialized { await self.shutdownNow() }
    }

    /// Stops the core and starts it again with the same configuration (or a new one).
    public func restart(with newConfiguration: TorConfiguration? = nil) async throws {
        try await serialized { try await self.restartNow(newConfiguration) }
    }

    private func restartNow(_ newConfiguration: TorConfiguration?) async throws {
        guard let configuration = newConfiguration ?? self.configuration else {
            throw TorCoreError(.notRunning, kind: .usage, "restart before any start")
        }
        await shutdownNow()
        try await startNow(configuration)
    }

    /// Applies options to the running tor with SETCONF (no restart). Keys in `resetting` that are
    /// absent from `options` go back to their defaults. Starts a new bootstrap attempt: the stall
    /// flag clears and the deadline starts again.
    public func reconfigure(_ options: [TorOption], resetting: [String] = []) async throws {
        guard let control else { throw TorCoreError(.notRunning, kind: .usage, "tor is not running") }
        if let refusal = options.lazy.compactMap(TorOptionPolicy.refusal(of:)).first
            ?? resetting.lazy.compactMap(TorOptionPolicy.refusal(ofResetting:)).first {
            throw TorCoreError(.invalidConfiguration, kind: .usage, refusal)
        }
        let present = Set(options.map(\.key))
        var pairs: [(key: String, value: String?)] = options.map { ($0.key, $0.value) }
        pairs += resetting.filter { !present.contains($0) }.map { ($0, nil) }
        guard !pairs.isEmpty else { return }
        // Before tor sees them: a warning about a new bridge may come at once.
        logRelay?.learn(options)
        try await control.setConf(pairs)
        configuration?.options.removeAll { present.contains($0.key) || resetting.contains($0.key) }
        configuration?.options += options
        beginAttempt()
        try? await refreshBootstrapPhase()
    }

    /// Waits until the core is ready, up to `timeout`. Returns false on timeout or failure.
    public func awaitReady(timeout: Duration = .seconds(75)) async -> Bool {
        if status.isReady { return true }
        let updates = statusUpdates()
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await update in updates {
                    if update.isReady { return true }
                    if update.state == .failed || update.state == .idle && update.lastError != nil { return false }
                }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let result = await group.next() ?? false
            group.cancelAll()
            return result
        }
    }

    /// A GETINFO on the running core (e.g. "net/listeners/socks", "status/bootstrap-phase").
    public func getInfo(_ keys: [String]) async throws -> [String: String] {
        guard let control else { throw TorCoreError(.notRunning, kind: .usage, "tor is not running") }
        return try await control.getInfo(keys)
    }

    // MARK: Internals

    private func serialized(_ operation: @escaping @Sendable () async throws -> Void) async throws {
        let previous = lifecycleTail
        let task = Task<Result<Void, any Error>, Never> {
            await previous?.value
            do { try await operation(); return .success(()) } catch { return .failure(error) }
        }
        lifecycleTail = Task { _ = await task.value }
        try await task.value.get()
    }

    private func publish() {
        for continuation in subscribers.values { continuation.yield(status) }
    }

    private func startNow(_ configuration: TorConfiguration) async throws {
        guard core == nil else {
            throw TorCoreError(.alreadyRunning, kind: .usage, "this manager's tor core is already running")
        }
        // The options come after the core's own: one that opens a control port or a public
        // listener would undo them (TorOptionPolicy), whoever built the configuration.
        if let refusal = configuration.options.lazy.compactMap(TorOptionPolicy.refusal(of:)).first {
            throw TorCoreError(.invalidConfiguration, kind: .usage, refusal)
        }
        try EmbeddedTorSlot.claim()
        var slotHeld = true
        defer { if slotHeld { EmbeddedTorSlot.release() } }

        self.configuration = configuration
        status = TorStatus()
        status.state = .starting
        status.socks = configuration.socks
        publish()

        // What tor's log held before this start: a log that has not grown says tor refused its
        // configuration before opening it (the file may be a previous run's, or missing).
        logSizeAtStart = Self.fileSize(configuration.logFile)
        let emptyTorrc: URL
        do {
            try configuration.socks.ensureAvailable()
            emptyTorrc = try Self.prepareDataDirectory(configuration.dataDirectory)
        } catch {
            fail(error)
            throw error
        }
        let thread: EmbeddedTorThread
        let relay: TorLogRelay?
        do {
            relay = configuration.noticeLevelLog ? nil : try TorLogRelay(logFile: configuration.logFile, options: configuration.options)
            do {
                thread = try EmbeddedTorThread(arguments: configuration.commandLine(emptyTorrc: emptyTorrc, logDestination: relay?.torPath))
            } catch {
                await relay?.finish()
                throw error
            }
        } catch {
            fail(error)
            throw error
        }
        logRelay = relay
        slotHeld = false  // the tor thread releases it when tor_run_main returns
        core = thread
        let connection = ControlConnection(fileDescriptor: thread.controlSocket)
        control = connection

        let exitWatcher = thread
        Task { [weak self] in
            let code = await exitWatcher.waitForExit()
            // Every line tor wrote is in tor.log before anyone is told to read it.
            await relay?.finish()
            await self?.coreExited(thread: exitWatcher, code: code)
        }

        eventTask = Task { [weak self] in
            for await event in connection.events {
                await self?.handle(event: event)
            }
        }
        do {
            try await connection.setEvents(["STATUS_CLIENT", "ORCONN"])
            // tor binds its listeners before the control connection answers: an automatic port
            // is known from here on (and published with the next status).
            if configuration.socks.isAutomatic { _ = await socksListenerIsBound() }
            beginAttempt()
            try await refreshBootstrapPhase()
        } catch {
            await connection.closeAndWait()
            let code = await thread.waitForExit()
            await relay?.finish()
            core = nil
            control = nil
            // The control connection closes because tor exited: the exit is the news. tor
            // refuses a bad configuration before its log file opens; then its exit status is all
            // that is left (POSTERN_TOR_STDERR=1 shows its warnings) and naming the log would
            // send the user to a file that is missing or holds an older run.
            let reason = exitError(code: code, whileStarting: true)
            fail(reason)
            throw reason
        }
    }

    private func shutdownNow() async {
        guard let core, let control else { return }
        status.state = .stopping
        publish()
        watchdogTask?.cancel()
        // SHUTDOWN makes a client exit at once; closing the owning socket is the fallback.
        try? await control.signal("SHUTDOWN")
        let exitedInTime = await withTaskGroup(of: Bool.self) { group in
            group.addTask { _ = await core.waitForExit(); return true }
            group.addTask { try? await Task.sleep(for: .seconds(10)); return false }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        if !exitedInTime {
            control.close()
            _ = await core.waitForExit()
        }
        await logRelay?.finish()
        await control.closeAndWait()
        eventTask?.cancel()
        self.core = nil
        self.control = nil
        status.state = .idle
        status.bootstrapDidStall = false
        publish()
    }

    private func coreExited(thread: EmbeddedTorThread, code: Int32) {
        guard core === thread else { return }
        // An exit we did not ask for.
        if status.state != .stopping {
            core = nil
            control?.close()
            control = nil
            watchdogTask?.cancel()
            fail(exitError(code: code, whileStarting: status.state == .starting))
        }
    }

    /// What to tell about an exit of tor's. Whichever notices it first (the control connection
    /// closing while starting, or the thread's exit), the user reads the same. A log that has not
    /// grown since the start says tor refused its configuration before opening it; then naming the
    /// log would send the user to a file that is missing or holds an older run, and the exit status
    /// is all there is (POSTERN_TOR_STDERR=1 shows tor's warnings).
    private func exitError(code: Int32, whileStarting: Bool) -> TorCoreError {
        guard let logFile = configuration?.logFile else {
            return TorCoreError(.torExited, "tor exited unexpectedly with status \(code)")
        }
        let logGrew = (Self.fileSize(logFile) ?? 0) > (logSizeAtStart ?? 0)
        if !logGrew {
            return TorCoreError(.torExited, "tor refused its configuration and stopped before writing its log (exit status \(code)); set POSTERN_TOR_STDERR=1 to see tor's warnings")
        }
        return whileStarting
            ? TorCoreError(.torExited, "tor stopped while starting (exit status \(code)); see its log: \(logFile.path)")
            : TorCoreError(.torExited, "tor exited unexpectedly with status \(code); see \(logFile.path)")
    }

    private func fail(_ error: any Error) {
        status.state = .failed
        status.lastError = (error as? TorCoreError) ?? TorCoreError(.ffiFailure, "\(error)")
        publish()
    }

    /// A new bootstrap attempt: clear the stall flag and arm the deadline.
    private func beginAttempt() {
        attempt += 1
        let thisAttempt = attempt
        status.bootstrapDidStall = false
        if status.state == .stalled || status.state == .ready || status.state == .starting {
            status.state = status.bootstrapProgress == 100 ? .ready : .bootstrapping
        }
        publish()
        watchdogTask?.cancel()
        let deadline = configuration?.bootstrapDeadline ?? .seconds(75)
        watchdogTask = Task { [weak self] in
            try? await Task.sleep(for: deadline)
            guard !Task.isCancelled else { return }
            await self?.deadlinePassed(attempt: thisAttempt)
        }
    }

    private func deadlinePassed(attempt deadlineAttempt: Int) {
        guard deadlineAttempt == attempt, core != nil, !status.isReady, status.state != .stopping else { return }
        status.bootstrapDidStall = true
        status.state = .stalled
        publish()
    }

    private func refreshBootstrapPhase() async throws {
        guard let control else { return }
        let info = try await control.getInfo(["status/bootstrap-phase"])
        if let text = info["status/bootstrap-phase"], let phase = try BootstrapPhase.parse(statusText: text) {
            await apply(phase)
        }
    }

    private func handle(event: ControlReply) async {
        guard let first = event.lines.first else { return }
        if let orConnection = try? OrConnectionEvent.parse(eventText: first.text) {
            if let signal = ConnectionSignal(orConnection) { publish(signal) }
            return
        }
        guard first.text.hasPrefix("STATUS_CLIENT ") else { return }
        guard let phase = try? BootstrapPhase.parse(statusText: String(first.text.dropFirst("STATUS_CLIENT ".count))) else { return }
        if let problem = phase.problem, let signal = ConnectionSignal(problem) { publish(signal) }
        await apply(phase)
    }

    private func apply(_ phase: BootstrapPhase) async {
        guard core != nil, status.state != .stopping else { return }
        if let warning = phase.warning {
            status.bootstrapWarning = warning
        }
        status.bootstrapProgress = phase.progress
        status.bootstrapTag = phase.tag
        status.bootstrapSummary = phase.summary
        if phase.progress == 100 {
            if await socksListenerIsBound() {
                status.state = .ready
                status.bootstrapDidStall = false
                status.bootstrapWarning = nil
                watchdogTask?.cancel()
            }
        } else if status.state != .stalled {
            status.state = .bootstrapping
        }
        publish()
    }

    /// Asks tor which SOCKS listener it bound (`GETINFO net/listeners/socks`). For an automatic
    /// port the bound one becomes `status.socks`, so callers learn the port tor chose.
    private func socksListenerIsBound() async -> Bool {
        guard let control, let socks = configuration?.socks,
              let text = try? await control.getInfo(["net/listeners/socks"])["net/listeners/socks"] else { return false }
        let listeners = SocksEndpoint.parseListeners(text)
        if socks.isAutomatic {
            guard let bound = listeners.first(where: { $0.host == socks.host }) else { return false }
            status.socks = bound
            return true
        }
        return listeners.contains(socks)
    }

    private static func fileSize(_ file: URL) -> Int64? {
        var info = stat()
        guard stat(file.path, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    private static func prepareDataDirectory(_ directory: URL) throws(TorCoreError) -> URL {
        let manager = FileManager.default
        do {
            try manager.createDirectory(at: directory, withIntermediateDirectories: true,
                                        attributes: [.posixPermissions: 0o700])
            try manager.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
            let empty = directory.appendingPathComponent("empty-torrc")
            // Private like every file Postern keeps (its content is empty, but a check cannot tell).
            if !manager.fileExists(atPath: empty.path),
               !manager.createFile(atPath: empty.path, contents: Data(), attributes: [.posixPermissions: 0o600]) {
                throw TorCoreError(.filesystem, "cannot create \(empty.path)")
            }
            return empty
        } catch {
            throw TorCoreError(.filesystem, "cannot prepare the data directory \(directory.path): \(error.localizedDescription)")
        }
    }
}
