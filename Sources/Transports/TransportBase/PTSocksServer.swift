import TransportWire

/// The in-process way to serve tor: a SOCKS5 listener on 127.0.0.1 for one transport.
///
/// tor is configured with `ClientTransportPlugin <name> socks5 127.0.0.1:<port>`; for each bridge
/// connection it sends the bridge's arguments in the RFC 1929 username/password fields (pt-spec §5:
/// escaped `k=v;k=v`, split after 255 bytes into the password; a lone NUL password means empty) and
/// CONNECTs to the bridge's IP:port. Arguments are validated before dialing; the SOCKS success reply
/// is sent only after the transport's handshake has completed, then bytes are relayed both ways.
///
/// The rule for this decoder, as for every decoder of input from a peer (here: any local user):
/// no byte may trap, hang or grow memory without a stated cap. Every length on the wire is one byte
/// (methods, username, password: at most 255), read into a buffer of at most 255 + one 4 KiB read;
/// ports and addresses are fixed-size; there is no arithmetic on a client's number beyond widening.
/// The negotiation has a deadline (`negotiationTimeout`, 30 s), sessions are capped
/// (``SocksAdmission/maximumSessions``) and a restricted listener refuses any destination that is
/// not one of the run's bridges.
public final class PTSocksServer: Sendable {
    public let transportName: TransportName
    private let listener: LoopbackListener
    private let acceptTask: Task<Void, Never>
    public let admission: SocksAdmission

    /// The port tor should use (`127.0.0.1:port`).
    public var port: UInt16 { listener.port }
    public var endpoint: TransportEndpoint { listener.endpoint }

    /// Binds 127.0.0.1:`port` (0 = a free port) and starts accepting.
    /// `negotiationTimeout` bounds the SOCKS exchange before CONNECT (not the transport's dial).
    /// `dialer` is how the transport reaches bridges (directly, or through tor's upstream proxy).
    /// `admission` says which clients, which destinations and how many sessions at once (default:
    /// pt-spec's open listener; `postern run`'s in-process listeners are restricted to its own
    /// connections and its bridges). Refused negotiations and sessions over the cap are warned
    /// about through `refusals`, connections that are not this process's through `strangers`,
    /// each at most one warning per its interval: a stranger connecting now and then must not use
    /// up the warnings that would show tor's own connections failing.
    ///
    /// A listener restricted to this process's connections first checks, once, that it can
    /// recognise them, and throws `client-check-unavailable` when it cannot
    /// (``SocksAdmission/checkClientsCanBeRecognised()``).
    public init(transport: any PluggableTransport, port: UInt16 = 0, events: TransportEventSink = .discard,
                dialer: OutboundDialer = .direct, negotiationTimeout: Duration = .seconds(30),
                admission: SocksAdmission = .open(), refusals: RefusalWarningLimiter = RefusalWarningLimiter(),
                strangers: RefusalWarningLimiter = RefusalWarningLimiter()) throws(TransportError) {
        try admission.checkClientsCanBeRecognised()
        let listener = try LoopbackListener(port: port)
        self.listener = listener
        self.transportName = transport.name
        self.admission = admission
        acceptTask = Task {
            await withDiscardingTaskGroup { group in
                while !Task.isCancelled {
                    guard let client = try? await listener.accept() else { break }
                    // Before a slot is taken: a stranger's connection must hold none of tor's.
                    // Warned before the close, so that a client seeing the close finds the warning made.
                    guard admission.admitsClient(client) else {
                        strangers.warn(events, transport.name, "SOCKS client refused: the connection is not this process's")
                        client.close()
                        continue
                    }
                    guard admission.enter() else {
                        refusals.warn(events, transport.name, "SOCKS session refused: \(admission.maximumSessions) sessions are open")
                        client.close()
                        continue
                    }
                    group.addTask {
                        defer { admission.leave() }
                        await SocksSession(client: client, transport: transport, context: DialContext(events: events, dialer: dialer),
                                           negotiationTimeout: negotiationTimeout, admission: admission, refusals: refusals).run()
                    }
                }
                group.cancelAll()
            }
        }
    }

    /// Stops accepting and tears down every open session.
    public func stop() {
        listener.close()
        acceptTask.cancel()
    }

    /// Waits until the accept loop and all sessions have ended (after `stop`).
    public func waitUntilStopped() async { await acceptTask.value }
}

/// SOCKS5 reply codes (RFC 1928 §6).
enum SocksReply: UInt8 {
    case succeeded = 0x00
    case generalFailure = 0x01
    case notAllowed = 0x02
    case networkUnreachable = 0x03
    case hostUnreachable = 0x04
    case connectionRefused = 0x05
    case ttlExpired = 0x06
    case commandNotSupported = 0x07
    case addressTypeNotSupported = 0x08

    init(for error: Error) {
        guard let error = error as? TransportError else { self = .generalFailure; return }
        switch error.code {
        case .connectionRefused: self = .connectionRefused
        case .networkUnreachable: self = .networkUnreachable
        case .hostUnreachable: self = .hostUnreachable
        default: self = error.kind == .timeout ? .ttlExpired : .generalFailure
        }
    }
}

/// Reads exact byte counts from a socket, keeping whatever arrives beyond them.
struct BufferedReader {
    let socket: any TransportConnection
    var buffer: [UInt8] = []

    mutating func read(exactly count: Int) async throws -> [UInt8] {
        while buffer.count < count {
            let chunk = try await socket.read(maximumCount: 4096)
            if chunk.isEmpty {
                throw TransportError(code: .socksProtocol, kind: .protocolViolation, message: "the client closed the connection during SOCKS negotiation")
            }
            buffer += chunk
        }
        defer { buffer.removeFirst(count) }
        return Array(buffer.prefix(count))
    }

    mutating func readByte() async throws -> UInt8 { try await read(exactly: 1)[0] }
}

package struct SocksSession {
    let client: TCPSocket
    let transport: any PluggableTransport
    let context: DialContext
    let negotiationTimeout: Duration
    let admission: SocksAdmission
    let refusals: RefusalWarningLimiter
    var events: TransportEventSink { context.events }

    private func reject(_ message: String) {
        refusals.warn(events, transport.name, message)
    }

    private static func protocolError(_ message: String) -> TransportError {
        TransportError(code: .socksProtocol, kind: .protocolViolation, message: message)
    }

    func run() async {
        defer { client.close() }
        let client = self.client
        let negotiated: (PreparedDial, TransportEndpoint, [UInt8])
        do {
            negotiated = try await withDeadline(negotiationTimeout, expired: {
                client.abort(with: TransportError(code: .timedOut, kind: .timeout, message: "SOCKS negotiation timed out"))
            }) {
                try await Self.negotiate(client: client, transport: transport, admission: admission)
            }
        } catch {
            reject("SOCKS negotiation failed: \((error as? TransportError)?.message ?? "unexpected error")")
            return
        }
        let (prepared, target, early) = negotiated
        let remote: any TransportConnection
        do {
            remote = try await prepared.dial(target, context: context)
        } catch {
            try? await client.write(Self.reply(SocksReply(for: error)))
            return
        }
        do {
            try await client.write(Self.reply(.succeeded))
            if !early.isEmpty { try await remote.write(early) }
        } catch {
            remote.close()
            return
        }
        if let failure = await Self.relay(client: client, remote: remote),
           let error = failure as? TransportError, error.kind != .cancelled {
            events.emit(TransportEvent(kind: .connectionClosed, severity: .warning, transport: transport.name,
                                       message: "connection ended: \(error)"))
        } else {
            events.emit(TransportEvent(kind: .connectionClosed, severity: .debug, transport: transport.name, message: "connection closed"))
        }
    }

    /// Greeting, RFC 1929 arguments, CONNECT. Returns the validated dial, the target and any bytes
    /// the client sent after its request. (Static, over any connection and `package` so that the
    /// `PTSocksFuzzer` target can drive it from memory: Fuzz/PTSocksFuzzer/PTSocksFuzzEntry.swift.)
    package static func negotiate(client: any TransportConnection, transport: any PluggableTransport,
                          admission: SocksAdmission) async throws -> (PreparedDial, TransportEndpoint, [UInt8]) {
        var reader = BufferedReader(socket: client)
        let version = try await reader.readByte()
        guard version == 5 else { throw Self.protocolError("SOCKS version \(version) is not supported (only 5)") }
        let methodCount = Int(try await reader.readByte())
        let methods = try await reader.read(exactly: methodCount)
        let arguments: TransportArguments
        if methods.contains(0x02) {
            try await client.write([5, 0x02])
            arguments = try await readArguments(&reader, client: client)
        } else if methods.contains(0x00) {
            try await client.write([5, 0x00])
            arguments = TransportArguments()
        } else {
            try await client.write([5, 0xFF])
            throw Self.protocolError("the client offered no usable authentication method")
        }
        let prepared: PreparedDial
        do {
            prepared = try transport.prepareDial(arguments: arguments)
        } catch {
            if methods.contains(0x02) { try? await client.write([1, 1]) }
            throw error
        }
        if methods.contains(0x02) { try await client.write([1, 0]) }

        let header = try await reader.read(exactly: 4)
        guard header[0] == 5 else { throw Self.protocolError("request has version \(header[0])") }
        guard header[1] == 1 else {
            try await client.write(Self.reply(.commandNotSupported))
            throw Self.protocolError("command \(header[1]) is not supported (only CONNECT)")
        }
        let target: TransportEndpoint
        switch header[3] {
        case 0x01:
            let address = try await reader.read(exactly: 4)
            let port = try await reader.read(exactly: 2)
            target = try TransportEndpoint(ipv4: address, port: UInt16(port[0]) << 8 | UInt16(port[1]))
        case 0x04:
            let address = try await reader.read(exactly: 16)
            let port = try await reader.read(exactly: 2)
            target = try TransportEndpoint(ipv6: address, port: UInt16(port[0]) << 8 | UInt16(port[1]))
        default:
            // Domain names are never sent by tor and would need a lookup outside Tor.
            try await client.write(Self.reply(.addressTypeNotSupported))
            throw Self.protocolError("address type \(header[3]) is not supported (IPv4 and IPv6 literals only)")
        }
        guard target.port != 0 else {
            try await client.write(Self.reply(.generalFailure))
            throw Self.protocolError("port 0 is not a valid target")
        }
        // Never name the destination: it may be a bridge of somebody else's.
        guard admission.admits(target, arguments) else {
            try await client.write(Self.reply(.notAllowed))
            throw TransportError(code: .destinationNotAllowed, kind: .invalidInput,
                                 message: "refused a CONNECT to a destination that is not one of this run's bridges")
        }
        return (prepared, target, reader.buffer)
    }

    /// RFC 1929: `01 ULEN UNAME PLEN PASSWD`; the argument string is UNAME followed by PASSWD unless
    /// PASSWD is a single NUL.
    private static func readArguments(_ reader: inout BufferedReader, client: any TransportConnection) async throws -> TransportArguments {
        let version = try await reader.readByte()
        guard version == 1 else {
            try await client.write([1, 1])
            throw Self.protocolError("username/password sub-negotiation version \(version) (expected 1)")
        }
        let usernameLength = Int(try await reader.readByte())
        let username = try await reader.read(exactly: usernameLength)
        let passwordLength = Int(try await reader.readByte())
        let password = try await reader.read(exactly: passwordLength)
        guard usernameLength > 0, passwordLength > 0 else {
            try await client.write([1, 1])
            throw Self.protocolError("empty username or password field")
        }
        let joined = password == [0] ? username : username + password
        guard let text = String(validating: joined, as: UTF8.self) else {
            try await client.write([1, 1])
            throw TransportError(code: .invalidArguments, kind: .invalidInput, message: "transport arguments are not UTF-8")
        }
        do {
            return try TransportArguments(parsing: text)
        } catch {
            try await client.write([1, 1])
            throw error
        }
    }

    static func reply(_ code: SocksReply) -> [UInt8] {
        [5, code.rawValue, 0, 1, 0, 0, 0, 0, 0, 0]
    }

    /// Copies both ways; a transport that is a `ForwardingConnection` writes to tor's socket from
    /// its own buffers instead of handing out arrays. End of stream is passed on as a half-close; an error ends both directions
    /// and is returned so the session can log why the connection ended. The transport's error wins
    /// over tor's side: when the transport fails, this closes tor's socket, and tor's reader then
    /// fails too (a cancellation). Which of the two finishes first is up to the scheduler, so taking
    /// the first one would log "connection closed" for a peer's protocol violation now and then.
    static func relay(client: TCPSocket, remote: any TransportConnection) async -> Error? {
        enum Side { case tor, transport }
        let failures = await withTaskGroup(of: (Side, Error?).self) { group -> [Side: Error] in
            group.addTask {
                do {
                    while true {
                        let bytes = try await client.read(maximumCount: 65536)
                        if bytes.isEmpty { await remote.closeWrite(); return (.tor, nil) }
                        try await remote.write(bytes)
                    }
                } catch {
                    remote.close()
                    client.close()
                    return (.tor, error)
                }
            }
            group.addTask {
                do {
                    if let source = remote as? any ForwardingConnection {
                        while try await source.forward(to: client) > 0 {}
                        await client.closeWrite()
                        return (.transport, nil)
                    }
                    while true {
                        let bytes = try await remote.read(maximumCount: 65536)
                        if bytes.isEmpty { await client.closeWrite(); return (.transport, nil) }
                        try await client.write(bytes)
                    }
                } catch {
                    remote.close()
                    client.close()
                    return (.transport, error)
                }
            }
            var failures: [Side: Error] = [:]
            for await (side, error) in group { if let error { failures[side] = error } }
            return failures
        }
        remote.close()
        client.close()
        let candidates = [failures[.transport], failures[.tor]].compactMap { $0 }
        return candidates.first { ($0 as? TransportError)?.kind != .cancelled } ?? candidates.first
    }
}
