import Synchronization

/// Who may use a PT SOCKS listener, and how many at once.
///
/// The listener is on 127.0.0.1, so every local user can connect to it. Left open, it would be an
/// obfs4 or snowflake tunnel to anywhere for anyone on the machine. The in-process listeners of
/// `postern run` (``restricted(to:)``) therefore accept only the bridges this run gave tor, whose
/// exact address and arguments tor sends; any other CONNECT is refused with SOCKS reply 2 ("not
/// allowed by ruleset") before anything is dialled. The managed `postern pt-client` keeps pt-spec's
/// open behaviour (tor starts it and owns its port) with ``open``. Both cap concurrent sessions at
/// ``maximumSessions``: a session beyond it is closed at once, before it is read.
///
/// The cap alone let another local account hold every slot (connect and stay silent) and so fail
/// tor's own bridge connections. A restricted listener therefore also admits only connections this
/// process opened (``Clients/thisProcess``; tor is in-process), checked from the kernel's socket
/// table before a slot is taken: a stranger's connection is closed unread and holds nothing.
/// Reserving slots for tor instead would still hand strangers the rest, and tor's connections
/// cannot be told from theirs by anything they send.
public final class SocksAdmission: Sendable {
    /// One bridge as tor asks for it: the IP:port it CONNECTs to and the arguments it sends.
    public struct Bridge: Hashable, Sendable {
        public let endpoint: TransportEndpoint
        /// Order-independent: tor sends them in the bridge line's order, but nothing depends on it.
        public let arguments: [TransportArguments.Pair]

        public init(endpoint: TransportEndpoint, arguments: TransportArguments) {
            self.endpoint = endpoint
            self.arguments = arguments.pairs.sorted { ($0.key, $0.value) < ($1.key, $1.value) }
        }
    }

    /// Concurrent SOCKS sessions per listener. tor opens one per bridge it connects to (circuits share
    /// it); a local flood stops here instead of at the file-descriptor limit.
    public static let defaultMaximumSessions = 256

    /// Whose connections a listener takes.
    public enum Clients: Sendable {
        /// Any local user's (pt-spec: the loopback port is the only gate).
        case anyLocalUser
        /// Only connections opened by this process (its embedded tor).
        case thisProcess
        /// Only connections opened by one child process, named once it has started (an external
        /// plugin's egress gate, ``PluginEgressGate``); none before.
        case childProcess(ChildProcessReference)
    }

    /// The process a ``Clients/childProcess(_:)`` listener serves, set when it has been spawned.
    public final class ChildProcessReference: Sendable {
        private let pid = Mutex<Int32?>(nil)
        public init() {}
        public var processID: Int32? { pid.withLock { $0 } }
        public func adopt(_ processID: Int32?) { pid.withLock { $0 = processID } }
    }

    public let maximumSessions: Int
    public let clients: Clients
    /// nil: any destination (pt-spec's open listener).
    private let allowed: Mutex<Set<Bridge>?>
    private let sessions = Mutex(0)

    /// How a connection's client is recognised (the kernel's word; tests put a machine without
    /// netlink sock_diag in its place).
    let clientOrigin: @Sendable (Int32) -> LoopbackClientOrigin.Verdict

    init(allowed: Set<Bridge>?, maximumSessions: Int, clients: Clients,
         clientOrigin: @escaping @Sendable (Int32) -> LoopbackClientOrigin.Verdict = LoopbackClientOrigin.verdict) {
        self.allowed = Mutex(allowed)
        self.maximumSessions = maximumSessions
        self.clients = clients
        self.clientOrigin = clientOrigin
    }

    /// pt-spec's listener: any destination and arguments (the managed `pt-client`).
    public static func open(maximumSessions: Int = defaultMaximumSessions) -> SocksAdmission {
        SocksAdmission(allowed: nil, maximumSessions: maximumSessions, clients: .anyLocalUser)
    }

    /// Only `bridges` (the in-process listeners; see ``allow(_:)`` to change them), and only
    /// connections from `clients` (default: this process).
    public static func restricted(to bridges: [Bridge] = [], maximumSessions: Int = defaultMaximumSessions,
                                  clients: Clients = .thisProcess) -> SocksAdmission {
        SocksAdmission(allowed: Set(bridges), maximumSessions: maximumSessions, clients: clients)
    }

    /// Destinations a restricted listener keeps at most through ``permit(_:)``.
    public static let maximumPermitted = 4096

    /// Adds one destination to a restricted listener's (no effect on an open one). Beyond
    /// ``maximumPermitted`` the set is emptied first: a caller permits each destination right
    /// before it is dialled, so only dials older than that many others lose their place.
    public func permit(_ bridge: Bridge) {
        allowed.withLock { current in
            guard var permitted = current else { return }
            if permitted.count >= Self.maximumPermitted, !permitted.contains(bridge) { permitted = [] }
            permitted.insert(bridge)
            current = permitted
        }
    }

    /// Replaces the bridges a restricted listener accepts (no effect on an open one).
    public func allow(_ bridges: [Bridge]) {
        allowed.withLock { current in
            if current != nil { current = Set(bridges) }
        }
    }

    public var isOpen: Bool { allowed.withLock { $0 == nil } }

    func admits(_ endpoint: TransportEndpoint, _ arguments: TransportArguments) -> Bool {
        let bridge = Bridge(endpoint: endpoint, arguments: arguments)
        return allowed.withLock { $0?.contains(bridge) ?? true }
    }

    /// Whether `connection` comes from a client this listener takes.
    func admitsClient(_ connection: TCPSocket) -> Bool {
        switch clients {
        case .anyLocalUser: true
        case .thisProcess: clientOrigin(connection.descriptor) == .thisProcess
        case .childProcess(let child):
            if let pid = child.processID { LoopbackClientOrigin.verdict(connection.descriptor, heldBy: pid) == .thisProcess } else { false }
        }
    }

    /// Throws `client-check-unavailable` when this listener takes only this process's connections
    /// and this process cannot recognise its own (``LoopbackClientOrigin/selfCheck(recognise:)``):
    /// failing closed at start with the cause, not refusing every connection later.
    func checkClientsCanBeRecognised() throws(TransportError) {
        switch clients {
        case .anyLocalUser: break
        // The same kernel questions answer both: if this process's own connection is recognised,
        // so is its child's (same uid, its /proc/PID/fd readable to us).
        case .thisProcess, .childProcess: try LoopbackClientOrigin.selfCheck(recognise: clientOrigin)
        }
    }

    /// Takes a session slot; false when ``maximumSessions`` are open.
    func enter() -> Bool {
        sessions.withLock { count in
            guard count < maximumSessions else { return false }
            count += 1
            return true
        }
    }

    func leave() { sessions.withLock { $0 -= 1 } }

    /// Sessions open now.
    public var openSessions: Int { sessions.withLock { $0 } }
}
