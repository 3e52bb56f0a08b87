internal import CNice
import Dispatch
import Foundation
import Synchronization

/// ICE for one data channel, through libnice: one stream, one component, full agent, controlling
/// (we make the offer), non-trickle. libnice runs its GLib main loop on a thread of its own; its
/// callbacks only hand events to this object, which the async world awaits.
///
/// Lifecycle: `gather()` → put the candidates in the offer → `connect(to:)` with the answer's
/// credentials and candidates → `send`/`datagrams` → `close()` (also done by deinit).
public final class ICEAgent: Sendable {
    /// libnice's NiceComponentState values.
    public struct State: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt32
        public static let disconnected = State(rawValue: 0)
        public static let gathering = State(rawValue: 1)
        public static let connecting = State(rawValue: 2)
        public static let connected = State(rawValue: 3)
        public static let ready = State(rawValue: 4)
        public static let failed = State(rawValue: 5)
        public var description: String {
            ["disconnected", "gathering", "connecting", "connected", "ready", "failed"].indices.contains(Int(rawValue))
                ? ["disconnected", "gathering", "connecting", "connected", "ready", "failed"][Int(rawValue)] : "state \(rawValue)"
        }
    }

    /// Datagrams received on the component, in order of arrival.
    public let datagrams: AsyncStream<[UInt8]>

    private let handles: Handles
    private let events: Events

    /// The C handles; owned here, freed once in `close()`.
    private final class Handles: @unchecked Sendable {
        // Set once in init, read-only afterwards; libnice's agent calls are thread-safe.
        let context: OpaquePointer
        let loop: OpaquePointer
        let agent: OpaquePointer
        let stream: guint
        let callbacks: UnsafeMutablePointer<postern_nice_callbacks>
        let closed = Mutex(false)
        /// Signalled when the loop thread has left g_main_loop_run.
        let loopExited = DispatchSemaphore(value: 0)
        let loopStarted = Mutex(false)

        init(context: OpaquePointer, loop: OpaquePointer, agent: OpaquePointer, stream: guint,
             callbacks: UnsafeMutablePointer<postern_nice_callbacks>) {
            self.context = context
            self.loop = loop
            self.agent = agent
            self.stream = stream
            self.callbacks = callbacks
        }
    }

    /// What the C callbacks report.
    private final class Events: Sendable {
        struct Snapshot {
            var gathered = false
            var state = State.disconnected
            var waiters: [CheckedContinuation<Void, Never>] = []
        }
        let snapshot = Mutex(Snapshot())
        let datagrams: AsyncStream<[UInt8]>.Continuation

        init(datagrams: AsyncStream<[UInt8]>.Continuation) {
            self.datagrams = datagrams
        }

        func update(_ change: (inout Snapshot) -> Void) {
            let waiters = snapshot.withLock { s -> [CheckedContinuation<Void, Never>] in
                change(&s)
                defer { s.waiters = [] }
                return s.waiters
            }
            for waiter in waiters { waiter.resume() }
        }

        /// Waits until `condition` holds or `timeout` passes; true if it holds.
        func wait(timeout: Duration, until condition: @Sendable (Snapshot) -> Bool) async -> Bool {
            let deadline = ContinuousClock.now + timeout
            while true {
                if snapshot.withLock({ condition($0) }) { return true }
                if ContinuousClock.now >= deadline { return false }
                // Woken by the next event, or re-checked every 50 ms.
                let timer = Task { [weak self] in
                    try? await Task.sleep(for: .milliseconds(50))
                    self?.update { _ in }
                }
                await withCheckedContinuation { continuation in
                    snapshot.withLock { $0.waiters.append(continuation) }
                }
                timer.cancel()
            }
        }
    }

    /// - Parameters:
    ///   - stunServer: IP literal and port of the STUN server (the bridge line's first usable `ice=`).
    ///   - localAddresses: addresses to gather host candidates on; empty lets libnice choose its
    ///     interfaces (it skips loopback, so the test bed names 127.0.0.1).
    ///   - controlling: the client that makes the offer controls; a test's second agent does not.
    public init(stunServer: (ip: String, port: UInt16)?, localAddresses: [String] = [],
                controlling: Bool = true) throws(SnowflakeError) {
        var continuation: AsyncStream<[UInt8]>.Continuation!
        datagrams = AsyncStream(bufferingPolicy: .bufferingNewest(4096)) { continuation = $0 }
        let events = Events(datagrams: continuation)
        self.events = events

        try SnowflakeLibraries.ensureLoaded()
        guard let context = g_main_context_new(), let loop = g_main_loop_new(context, 0) else {
            throw SnowflakeError(code: .connection, kind: .network, message: "GLib main context could not be created")
        }
        let agent: OpaquePointer? = stunServer.flatMap { server in
            server.ip.withCString { postern_nice_agent_new(context, $0, guint(server.port), controlling ? 1 : 0) }
        } ?? postern_nice_agent_new(context, nil, 0, controlling ? 1 : 0)
        guard let agent else {
            g_main_loop_unref(loop)
            g_main_context_unref(context)
            throw SnowflakeError(code: .connection, kind: .network, message: "libnice could not create an ICE agent")
        }
        for address in localAddresses {
            guard address.withCString({ postern_nice_add_local_address(agent, $0) }) != 0 else {
                postern_nice_agent_unref(agent)
                g_main_loop_unref(loop)
                g_main_context_unref(context)
                throw SnowflakeError(code: .connection, kind: .invalidInput, message: "an ICE local address is not an IP literal")
            }
        }
        let stream = nice_agent_add_stream(agent, 1)
        let callbacks = UnsafeMutablePointer<postern_nice_callbacks>.allocate(capacity: 1)
        callbacks.initialize(to: postern_nice_callbacks(
            gathered: { user in
                Unmanaged<Events>.fromOpaque(user!).takeUnretainedValue().update { $0.gathered = true }
            },
            state: { user, state in
                Unmanaged<Events>.fromOpaque(user!).takeUnretainedValue().update { $0.state = State(rawValue: state) }
            },
            receive: { user, buffer, length in
                guard let buffer else { return }
                let bytes = Array(UnsafeRawBufferPointer(start: buffer, count: Int(length)))
                Unmanaged<Events>.fromOpaque(user!).takeUnretainedValue().datagrams.yield(bytes)
            },
            user: Unmanaged.passRetained(events).toOpaque()))
        let handles = Handles(context: context, loop: loop, agent: agent, stream: stream, callbacks: callbacks)
        self.handles = handles
        guard stream != 0, postern_nice_attach(agent, stream, context, callbacks) != 0 else {
            Self.release(handles)
            throw SnowflakeError(code: .connection, kind: .network, message: "libnice could not set up the ICE stream")
        }
        handles.loopStarted.withLock { $0 = true }
        let thread = Thread { [handles] in
            g_main_context_push_thread_default(handles.context)
            g_main_loop_run(handles.loop)
            g_main_context_pop_thread_default(handles.context)
            handles.loopExited.signal()
        }
        thread.name = "snowflake-ice"
        thread.start()
    }

    deinit {
        close()
    }

    /// Stops the loop and frees the agent (idempotent).
    public func close() {
        Self.release(handles)
        events.datagrams.finish()
    }

    private static func release(_ handles: Handles) {
        let first = handles.closed.withLock { closed -> Bool in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        // Nothing is freed while the loop thread may still dispatch a callback into it.
        if handles.loopStarted.withLock({ $0 }) {
            // A quit that lands before the thread enters g_main_loop_run is lost: repeat it.
            repeat {
                g_main_loop_quit(handles.loop)
                g_main_context_wakeup(handles.context)
            } while handles.loopExited.wait(timeout: .now() + .milliseconds(50)) == .timedOut
        }
        nice_agent_remove_stream(handles.agent, handles.stream)
        postern_nice_agent_unref(handles.agent)
        Unmanaged<AnyObject>.fromOpaque(handles.callbacks.pointee.user).release()
        handles.callbacks.deallocate()
        g_main_loop_unref(handles.loop)
        g_main_context_unref(handles.context)
    }

    /// Sets fresh local credentials, gathers every candidate (host, and server-reflexive through
    /// the STUN server) and returns them for the offer.
    public func gather(timeout: Duration = .seconds(10)) async throws(SnowflakeError)
        -> (usernameFragment: String, password: String, candidates: [ICECandidate]) {
        let credentials = DataChannelOffer.randomCredentials()
        let set = credentials.usernameFragment.withCString { ufrag in
            credentials.password.withCString { pwd in nice_agent_set_local_credentials(handles.agent, handles.stream, ufrag, pwd) }
        }
        guard set != 0, nice_agent_gather_candidates(handles.agent, handles.stream) != 0 else {
            throw SnowflakeError(code: .connection, kind: .network, message: "ICE gathering could not start")
        }
        guard await events.wait(timeout: timeout, until: { $0.gathered }) else {
            throw SnowflakeError(code: .timeout, kind: .network, message: "ICE gathering did not finish in time")
        }
        // Before any check starts: no FINGERPRINT keepalive to the STUN server (cnice.h says why).
        postern_nice_forget_stun_server(handles.agent)
        var candidates: [ICECandidate] = []
        var list = nice_agent_get_local_candidates(handles.agent, handles.stream, 1)
        let head = list
        while let node = list {
            let candidate = node.pointee.data.assumingMemoryBound(to: NiceCandidate.self)
            if let text = nice_agent_generate_local_candidate_sdp(handles.agent, candidate) {
                let line = String(cString: text)
                g_free(text)
                if line.hasPrefix("a=candidate:") {
                    candidates.append(try ICECandidate(attributeValue: String(line.dropFirst("a=candidate:".count))))
                }
            }
            list = node.pointee.next
        }
        g_slist_free_full(head) { nice_candidate_free($0?.assumingMemoryBound(to: NiceCandidate.self)) }
        return (credentials.usernameFragment, credentials.password, candidates)
    }

    /// Gives libnice the answer's credentials and candidates and waits for a working pair.
    public func connect(usernameFragment: String, password: String, candidates: [ICECandidate],
                        timeout: Duration = .seconds(10)) async throws(SnowflakeError) {
        let set = usernameFragment.withCString { ufrag in
            password.withCString { pwd in nice_agent_set_remote_credentials(handles.agent, handles.stream, ufrag, pwd) }
        }
        guard set != 0 else {
            throw SnowflakeError(code: .connection, kind: .network, message: "the snowflake proxy's ICE credentials were refused")
        }
        var list: UnsafeMutablePointer<GSList>?
        for candidate in candidates where candidate.component == 1 && candidate.transport == "udp" {
            if let parsed = ("a=candidate:" + candidate.attributeValue).withCString({
                nice_agent_parse_remote_candidate_sdp(handles.agent, handles.stream, $0)
            }) {
                list = g_slist_append(list, parsed)
            }
        }
        guard list != nil else {
            throw SnowflakeError(code: .connection, kind: .protocolViolation, message: "the snowflake proxy's answer has no usable ICE candidate")
        }
        let added = nice_agent_set_remote_candidates(handles.agent, handles.stream, 1, list)
        g_slist_free_full(list) { nice_candidate_free($0?.assumingMemoryBound(to: NiceCandidate.self)) }
        guard added > 0 else {
            throw SnowflakeError(code: .connection, kind: .network, message: "libnice took none of the snowflake proxy's candidates")
        }
        let reached = await events.wait(timeout: timeout) { $0.state == .ready || $0.state == .failed }
        let state = events.snapshot.withLock { $0.state }
        guard reached, state == .ready else {
            throw SnowflakeError(code: state == .failed ? .connection : .timeout, kind: .network,
                                 message: "ICE with the snowflake proxy did not connect (state \(state))")
        }
    }

    public var state: State { events.snapshot.withLock { $0.state } }

    /// Sends one datagram on the selected pair.
    ///
    /// Under the `closed` lock: `release` frees the agent only after it has set `closed` under that
    /// lock, so a send either completes before the agent is freed or sees `closed` and fails.
    /// Without it, a channel closed while its DTLS layer was still writing (a connection-assist
    /// probe that closes as soon as the data channel opens) called libnice with the freed agent:
    /// "nice_agent_send: assertion 'NICE_IS_AGENT (agent)' failed", a use after free.
    public func send(_ datagram: [UInt8]) throws(SnowflakeError) {
        let handles = handles
        let sent = handles.closed.withLock { closed -> Int32? in
            guard !closed else { return nil }
            return datagram.withUnsafeBufferPointer { buffer in
                buffer.baseAddress!.withMemoryRebound(to: gchar.self, capacity: buffer.count) {
                    nice_agent_send(handles.agent, handles.stream, 1, guint(buffer.count), $0)
                }
            }
        }
        guard let sent else {
            throw SnowflakeError(code: .closed, kind: .network, message: "ICE send after the agent was closed")
        }
        guard sent == Int32(datagram.count) else {
            throw SnowflakeError(code: .connection, kind: .network, message: "ICE send failed")
        }
    }
}
