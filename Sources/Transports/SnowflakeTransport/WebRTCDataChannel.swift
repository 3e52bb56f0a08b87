internal import CUsrsctp
import Foundation
import Synchronization
import TransportWire

// A WebRTC data channel to a snowflake proxy, assembled from its parts:
//
//   ICE (libnice, ICEAgent) → DTLS 1.2 (1.3 with a peer that offers it), we are the server
//     (NSS shaped like Firefox's WebRTC: DTLSServer over TransportTLS's DTLSServerSocket)
//   → SCTP on port 5000 (usrsctp in AF_CONN mode; we move its packets through DTLS)
//   → DCEP (RFC 8832): we open the channel with DATA_CHANNEL_OPEN on stream 1 (odd: the DTLS
//     server's IDs), reliable and ordered, label "snowflake-<16 hex>", empty protocol; the proxy
//     answers DATA_CHANNEL_ACK. Messages are binary (PPID 53; 57 for an empty one).
//
// The channel is a byte stream: every write is sent as binary messages of at most 16 KiB, and the
// received messages are concatenated (Turbo Tunnel does not care about message boundaries).
//
// Hostile input (the proxy ends DTLS, so it controls every byte here): SCTP and DTLS are parsed by
// usrsctp and NSS; our glue reads only the association-change notification (length checked
// first) and the first byte of a DCEP message. Received data waits for the session up to
// inboundLimit bytes, then the channel fails with data-channel-flood; an answer with more than
// answerCandidateLimit candidates is refused; every wait on the proxy (ICE, the association, the
// DCEP ACK) ends by openTimeout. A proxy that stops acknowledging fills our SCTP send buffer: a send
// then waits for room until the channel closes or fails (the session closes a silent carrier), and
// the usrsctp socket is used only under the lock that close takes (SCTPSocketSlot).

/// Protocol constants of the data channel.
enum DataChannelProtocol {
    static let sctpPort: UInt16 = 5000
    static let streamID: UInt16 = 1
    static let ppidControl: UInt32 = 50
    static let ppidString: UInt32 = 51
    static let ppidBinary: UInt32 = 53
    static let ppidStringEmpty: UInt32 = 56
    static let ppidBinaryEmpty: UInt32 = 57
    static let maxMessage = 16 * 1024
    /// Received bytes waiting for the session at most. usrsctp hands every message over at once, so
    /// SCTP's own window does not hold a proxy back; the session reads as fast as KCP takes it, and
    /// KCP and smux windows keep a legitimate server's bursts far below this.
    static let inboundLimit = 8 << 20
    /// Most remote candidates taken from an answer (a browser or pion proxy sends a handful).
    static let answerCandidateLimit = 32

    /// DATA_CHANNEL_OPEN: type 3, channel type 0 (reliable ordered), priority 0, reliability 0,
    /// label length, protocol length (0), label.
    static func openMessage(label: String) -> [UInt8] {
        let labelBytes = Array(label.utf8)
        return [0x03, 0x00, 0x00, 0x00, 0, 0, 0, 0, UInt8(labelBytes.count >> 8), UInt8(labelBytes.count & 0xff), 0, 0] + labelBytes
    }

    /// "snowflake-" + 16 lower-case hex characters, as the Go client names its channel.
    static func randomLabel() -> String {
        var generator = SystemRandomNumberGenerator()
        return "snowflake-" + (0..<8).map { _ in hexByte(UInt8.random(in: .min ... .max, using: &generator)) }.joined()
    }
}

/// A usrsctp socket; usrsctp's socket calls are thread-safe (it locks internally).
struct SocketHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// The data channel's SCTP socket over its life: opened once (when DTLS completes), closed once.
/// Every use of the pointer happens under the lock that holds this, so a send can never reach a
/// socket that `close` has freed, and nothing opens a socket after the channel closed.
enum SCTPSocketSlot {
    case unopened
    case open(SocketHandle)
    case closed
}

public final class WebRTCDataChannel: ByteStream {
    let core: Core

    /// The shared state of the pipeline; the C callbacks reach it through an unmanaged reference.
    /// Unchecked: `endpoint` is initialised once in `dial` before usrsctp sees it and only read after.
    final class Core: @unchecked Sendable {
        let ice: ICEAgent
        let dtls: Mutex<DTLSServer>
        let state = Mutex(State())
        let endpoint: UnsafeMutablePointer<postern_sctp_endpoint>
        let socket = Mutex(SCTPSocketSlot.unopened)

        struct State {
            var handshakeComplete = false
            var associationUp = false
            var acknowledged = false
            var closed = false
            var failure: SnowflakeError?
            var inbound: [UInt8] = []
            var reader: CheckedContinuation<Void, Never>?
            var lastInbound = ContinuousClock.now
            /// Sends waiting for room in a full SCTP send buffer (tests watch it).
            var sendsWaitingForRoom = 0
            /// Tests only: SCTP packets are dropped instead of sent, as if the proxy had stopped
            /// acknowledging, so the send buffer fills.
            var outboundDropped = false
        }

        static var closedError: SnowflakeError {
            SnowflakeError(code: .closed, kind: .network, message: "the data channel is closed")
        }

        init(ice: ICEAgent, dtls: sending DTLSServer) {
            self.ice = ice
            self.dtls = Mutex(dtls)
            endpoint = UnsafeMutablePointer<postern_sctp_endpoint>.allocate(capacity: 1)
        }

        func wake() {
            let reader = state.withLock { s -> CheckedContinuation<Void, Never>? in
                defer { s.reader = nil }
                return s.reader
            }
            reader?.resume()
        }

        func fail(_ error: SnowflakeError) {
            state.withLock { s in
                if !s.closed { s.failure = s.failure ?? error }
                s.closed = true
            }
            wake()
        }

        /// An SCTP packet from usrsctp: encrypt and send.
        func output(_ packet: [UInt8]) {
            if state.withLock({ $0.outboundDropped }) { return }
            do {
                let datagrams = try dtls.withLock { dtls throws(SnowflakeError) in try dtls.send(packet) }
                for datagram in datagrams { try ice.send(datagram) }
            } catch {
                fail(error)
            }
        }

        /// A message or notification from usrsctp.
        func message(_ data: [UInt8], stream: UInt16, ppid: UInt32, notification: Int32) {
            if notification < 0 {
                fail(SnowflakeError(code: .closed, kind: .network, message: "the SCTP association ended"))
                return
            }
            if notification > 0 {
                // sctp_assoc_change: sn_type (2), flags (2), length (4), sac_state (2), host order.
                guard data.count >= 10, UInt16(data[0]) | UInt16(data[1]) << 8 == 0x0001 else { return }
                let assocState = UInt16(data[8]) | UInt16(data[9]) << 8
                if assocState == 0x0001 || assocState == 0x0003 {  // COMM_UP, RESTART
                    state.withLock { $0.associationUp = true }
                } else {
                    fail(SnowflakeError(code: .closed, kind: .network, message: "the SCTP association failed"))
                }
                return
            }
            switch ppid {
            case DataChannelProtocol.ppidControl:
                if data.first == 0x02 { state.withLock { $0.acknowledged = true } }
            case DataChannelProtocol.ppidBinary, DataChannelProtocol.ppidString:
                let flooded = state.withLock { s -> Bool in
                    guard s.inbound.count + data.count <= DataChannelProtocol.inboundLimit else { return true }
                    s.inbound += data
                    s.lastInbound = .now
                    return false
                }
                if flooded {
                    fail(SnowflakeError(code: .dataChannelFlood, kind: .protocolViolation,
                                        message: "the snowflake proxy sent more than \(DataChannelProtocol.inboundLimit) bytes the session had not taken yet"))
                }
                wake()
            default:
                state.withLock { $0.lastInbound = .now }
            }
        }

        /// Feeds one ICE datagram through DTLS into SCTP.
        func receive(_ datagram: [UInt8]) throws(SnowflakeError) {
            // Datagrams ICE had buffered may still drain after close; none reaches usrsctp then.
            if state.withLock({ $0.closed }) { return }
            let (send, data, completed) = try dtls.withLock { dtls throws(SnowflakeError) in
                let (send, data) = try dtls.receive(datagram)
                return (send, data, dtls.handshakeComplete)
            }
            for out in send { try ice.send(out) }
            if completed && !state.withLock({ $0.handshakeComplete }) {
                state.withLock { $0.handshakeComplete = true }
                try openSCTP()
            }
            for packet in data {
                packet.withUnsafeBytes { postern_sctp_input(endpoint, $0.baseAddress, $0.count) }
            }
        }

        /// Opens the SCTP socket, once; after `closeSocket` it stays closed (a DTLS handshake that
        /// completes while buffered datagrams drain after close used to open one nobody closed).
        func openSCTP() throws(SnowflakeError) {
            try socket.withLock { slot throws(SnowflakeError) in
                switch slot {
                case .open: return
                case .closed: throw Self.closedError
                case .unopened:
                    guard let sock = postern_sctp_open(endpoint, DataChannelProtocol.sctpPort) else {
                        throw SnowflakeError(code: .connection, kind: .network, message: "the SCTP socket could not be opened")
                    }
                    slot = .open(SocketHandle(pointer: sock))
                }
            }
        }

        /// Closes the socket if one is open; true the first time only.
        func closeSocket() -> Bool {
            socket.withLock { slot -> Bool in
                switch slot {
                case .closed: return false
                case .unopened: break
                case .open(let handle): postern_sctp_close(handle.pointer, endpoint)
                }
                slot = .closed
                return true
            }
        }

        private enum SendAttempt {
            case sent
            case notOpen
            case failed(errno: Int32)
        }

        /// One message; waits while the send buffer is full, until there is room or the channel
        /// closes or fails. The socket is looked up on every attempt, under its lock.
        func send(_ message: [UInt8], ppid: UInt32) async throws(SnowflakeError) {
            var waiting = false
            defer { if waiting { state.withLock { $0.sendsWaitingForRoom -= 1 } } }
            while true {
                let (closed, failure) = state.withLock { ($0.closed, $0.failure) }
                if let failure { throw failure }
                if closed { throw Self.closedError }
                let attempt = socket.withLock { slot -> SendAttempt in
                    guard case .open(let handle) = slot else { return .notOpen }
                    let sent = message.withUnsafeBytes {
                        postern_sctp_send(handle.pointer, $0.baseAddress, $0.count, DataChannelProtocol.streamID, ppid)
                    }
                    return sent >= 0 ? .sent : .failed(errno: postern_errno())
                }
                switch attempt {
                case .sent:
                    return
                case .notOpen:
                    if let failure = state.withLock({ $0.failure }) { throw failure }
                    throw Self.closedError
                case .failed(let code) where code == EWOULDBLOCK || code == EAGAIN:
                    if !waiting {
                        waiting = true
                        state.withLock { $0.sendsWaitingForRoom += 1 }
                    }
                    try? await Task.sleep(for: .milliseconds(5))
                case .failed(let code):
                    throw SnowflakeError(code: .connection, kind: .network, message: "SCTP send failed (errno \(code))")
                }
            }
        }
    }

    private init(core: Core) {
        self.core = core
    }

    deinit {
        close()
    }

    /// The usrsctp stack, started once per process.
    private static let sctpStack: Void = postern_sctp_initialize()

    /// Rendezvous through `rendezvous`, then ICE, DTLS, SCTP and DCEP with the proxy it assigns.
    ///
    /// - Parameters:
    ///   - stunServer: from the bridge line's `ice=` (IP literal).
    ///   - localAddresses: addresses to gather host candidates on (the test bed: 127.0.0.1).
    ///   - openTimeout: the reference client's 10 s for the channel to open after the answer.
    ///   - candidateFilter: which gathered candidates go into the offer.
    public static func dial(rendezvous: BrokerRendezvous, fingerprint: String, stunServer: (ip: String, port: UInt16)?,
                            localAddresses: [String] = [], openTimeout: Duration = .seconds(10),
                            candidateFilter: @Sendable (ICECandidate) -> Bool = { _ in true },
                            poll: @Sendable (BrokerRendezvous, ClientPollRequest) async throws -> ClientPollResponse = { try await $0.exchange($1) })
        async throws -> WebRTCDataChannel {
        try SnowflakeLibraries.ensureLoaded()
        _ = sctpStack
        let ice = try ICEAgent(stunServer: stunServer, localAddresses: localAddresses)
        // The handshake gets the channel's own deadline, counted once ICE is connected.
        let dtls = try DTLSServer(handshakeTimeout: openTimeout)
        let digest = dtls.certificateDigest
        let local = try await ice.gather()
        let offer = DataChannelOffer(iceUsernameFragment: local.usernameFragment, icePassword: local.password,
                                     certificateDigest: digest, candidates: local.candidates.filter(candidateFilter))
        let response = try await poll(rendezvous, ClientPollRequest(offer: offer.sessionDescription, nat: .unknown,
                                                                    fingerprint: fingerprint))
        let answer = try DataChannelAnswer(sdp: try response.requireAnswer().sdp)
        guard answer.candidates.count <= DataChannelProtocol.answerCandidateLimit else {
            throw SnowflakeError(code: .brokerMessageMalformed, kind: .protocolViolation,
                                 message: "the proxy's answer has \(answer.candidates.count) ICE candidates, more than \(DataChannelProtocol.answerCandidateLimit)")
        }
        guard answer.setup != "passive" else {
            throw SnowflakeError(code: .unsupported, kind: .protocolViolation, message: "the proxy wants to be the DTLS server")
        }
        guard answer.fingerprintAlgorithm == "sha-256" else {
            throw SnowflakeError(code: .connection, kind: .protocolViolation,
                                 message: "the proxy's answer does not give a sha-256 certificate fingerprint")
        }
        // The handshake itself refuses any other certificate (bad_certificate), as a browser does.
        try dtls.expectPeerCertificate(sha256: answer.certificateDigest)
        let core = Core(ice: ice, dtls: dtls)
        core.endpoint.initialize(to: postern_sctp_endpoint(
            output: { user, packet, length in
                guard let user, let packet else { return 0 }
                let core = Unmanaged<Core>.fromOpaque(user).takeUnretainedValue()
                core.output(Array(UnsafeRawBufferPointer(start: packet, count: length)))
                return 0
            },
            message: { user, data, length, stream, ppid, notification in
                guard let user else { return }
                let bytes = data.map { Array(UnsafeRawBufferPointer(start: $0, count: length)) } ?? []
                Unmanaged<Core>.fromOpaque(user).takeUnretainedValue().message(bytes, stream: stream, ppid: ppid, notification: notification)
            },
            user: Unmanaged.passRetained(core).toOpaque()))
        let channel = WebRTCDataChannel(core: core)
        do {
            try await ice.connect(usernameFragment: answer.iceUsernameFragment, password: answer.icePassword,
                                  candidates: answer.candidates, timeout: openTimeout)
            channel.startPumps()
            let deadline = ContinuousClock.now + openTimeout
            while !core.state.withLock({ $0.associationUp || $0.closed }) {
                guard ContinuousClock.now < deadline else {
                    throw SnowflakeError(code: .timeout, kind: .network, message: "the snowflake proxy did not bring the SCTP association up in time")
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            if let failure = core.state.withLock({ $0.failure }) { throw failure }
            let peer = core.dtls.withLock { $0.peerCertificateDigest }
            guard peer == answer.certificateDigest, answer.fingerprintAlgorithm == "sha-256" else {
                throw SnowflakeError(code: .connection, kind: .protocolViolation,
                                     message: "the proxy's DTLS certificate does not match its answer's fingerprint")
            }
            try await core.send(DataChannelProtocol.openMessage(label: DataChannelProtocol.randomLabel()),
                                ppid: DataChannelProtocol.ppidControl)
            while !core.state.withLock({ $0.acknowledged || $0.closed }) {
                guard ContinuousClock.now < deadline else {
                    throw SnowflakeError(code: .timeout, kind: .network, message: "the snowflake proxy did not open the data channel in time")
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            if let failure = core.state.withLock({ $0.failure }) { throw failure }
            return channel
        } catch {
            channel.close()
            throw error
        }
    }

    private func startPumps() {
        let core = core
        Task.detached {
            for await datagram in core.ice.datagrams {
                do throws(SnowflakeError) {
                    try core.receive(datagram)
                } catch {
                    core.fail(error)
                    return
                }
            }
            core.fail(SnowflakeError(code: .closed, kind: .network, message: "ICE closed"))
        }
        // DTLS retransmissions while the handshake runs.
        Task.detached {
            while !core.state.withLock({ $0.handshakeComplete || $0.closed }) {
                do throws(SnowflakeError) {
                    let datagrams = try core.dtls.withLock { dtls throws(SnowflakeError) in try dtls.handleTimeout() }
                    for datagram in datagrams { try? core.ice.send(datagram) }
                } catch {
                    core.fail(error)
                    return
                }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    public func write(_ bytes: [UInt8]) async throws(SnowflakeError) {
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + DataChannelProtocol.maxMessage)
            try await core.send(Array(bytes[offset..<end]), ppid: DataChannelProtocol.ppidBinary)
            offset = end
        }
    }

    public func read(maximumCount: Int) async throws(SnowflakeError) -> [UInt8] {
        while true {
            let (data, closed, failure) = core.state.withLock { s -> ([UInt8], Bool, SnowflakeError?) in
                let take = min(max(1, maximumCount), s.inbound.count)
                let data = Array(s.inbound.prefix(take))
                s.inbound.removeFirst(take)
                return (data, s.closed, s.failure)
            }
            if !data.isEmpty { return data }
            if closed {
                if let failure, failure.code != .closed { throw failure }
                return []
            }
            await withCheckedContinuation { continuation in
                let ready = core.state.withLock { s -> Bool in
                    if !s.inbound.isEmpty || s.closed { return true }
                    s.reader = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }

    /// When the last message arrived (the reference client redials after 20 s of silence).
    public var lastInbound: ContinuousClock.Instant { core.state.withLock { $0.lastInbound } }

    /// A data channel has no half-close: the session ends with `close`.
    public func closeWrite() async {}

    public func close() {
        core.state.withLock { $0.closed = true }
        core.wake()
        guard core.closeSocket() else { return }
        core.ice.close()
        // usrsctp may still run a callback that was already under way; the endpoint and the
        // reference it carries are dropped a little later.
        let endpoint = UnsafeMutableRawPointer(core.endpoint)
        Task.detached {
            try? await Task.sleep(for: .seconds(5))
            let typed = endpoint.assumingMemoryBound(to: postern_sctp_endpoint.self)
            if let user = typed.pointee.user { Unmanaged<AnyObject>.fromOpaque(user).release() }
            typed.deallocate()
        }
    }
}
