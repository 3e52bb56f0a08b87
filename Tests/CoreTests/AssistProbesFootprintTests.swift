import BridgeConfig
import Foundation
import PosternLinkSpec
import PosternRuntime
import Synchronization
import Testing
import Glibc
@testable import TransportBase
@testable import ConnectionAssist
@testable import PosternTor

/// Connection assist's probes leave a small footprint (issue #22; docs/plans/CENSOR-AWARE-ASSIST.md
/// §3): a route's peers one after another, spaced, stopping at the first that answers; no repeat of
/// a probe that got past the connect; the gate's refusals are no evidence. Real sockets on
/// 127.0.0.2-4 (each peer its own address, as bridges have; 127.0.0.1 is not gated).
@Suite struct AssistProbesFootprintTests {
    /// A listener on `address` that counts the connections it accepted and keeps them open,
    /// reading and never answering (an obfs4 bridge behind a censor that drops what we send).
    final class SilentPeer: Sendable {
        let listener: LoopbackListener
        let endpoint: TransportEndpoint
        private let accepted = Atomic<Int>(0)
        var connections: Int { accepted.load(ordering: .relaxed) }

        init(_ address: String) throws {
            listener = try LoopbackListener(loopbackAddress: TransportEndpoint(ipv4: address.split(separator: ".").compactMap { UInt8($0) }, port: 0))
            endpoint = try TransportEndpoint(parsing: "\(address):\(listener.port)")
            Task { [self] in
                while let socket = try? await listener.accept() {
                    accepted.add(1, ordering: .relaxed)
                    Task { while let bytes = try? await socket.read(maximumCount: 4096), !bytes.isEmpty {} }
                }
            }
        }
    }

    private static func vanilla(_ endpoint: TransportEndpoint, _ n: Int) throws -> BridgeLine {
        try BridgeLine(validating: "\(endpoint) \(String(repeating: "B", count: 39))\(n)", rules: Transports.argumentRules)
    }

    @Test func peersOneAfterAnotherStoppingAtTheFirstThatAnswers() async throws {
        // The first refuses (a closed port), the second answers, the third must not be touched.
        let closed = try TransportEndpoint(parsing: "127.0.0.2:9")
        let second = try SilentPeer("127.0.0.3"), third = try SilentPeer("127.0.0.4")
        let route = AssistRoute(transport: .vanilla, origin: .yours,
                                bridges: [try Self.vanilla(closed, 1), try Self.vanilla(second.endpoint, 2), try Self.vanilla(third.endpoint, 3)],
                                limits: .obfs4Default)
        let probes = try AssistProbes(torOptions: [])
        let started = ContinuousClock.now
        let result = await probes.probe(route)
        let elapsed = ContinuousClock.now - started
        #expect(result.outcome == .passed)
        #expect(result.peersAnswered == 1)
        // The peer counts its accept on its own task: give it a moment.
        for _ in 0..<100 where second.connections == 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(second.connections == 1)
        #expect(third.connections == 0)
        // Spaced: the second peer was dialled after the pause, not alongside the first.
        #expect(elapsed >= probes.peerSpacing)
        second.listener.close()
        third.listener.close()
    }

    @Test func silenceAfterTheFirstPacketIsKeptApartAndNotRepeated() async throws {
        // An obfs4 bridge that takes the connection and the client's handshake and never answers.
        let peer = try SilentPeer("127.0.0.5")
        let line = try BridgeLine(validating: "obfs4 \(peer.endpoint) \(String(repeating: "A", count: 40)) cert=\(ConnectionAssistTests.cert) iat-mode=0",
                                  rules: Transports.argumentRules)
        let route = AssistRoute(transport: .obfs4, origin: .yours, bridges: [line], limits: .obfs4Default)
        let result = await (try AssistProbes(torOptions: [])).probe(route)
        #expect(result.outcome == .failed)
        #expect(result.problem == .silentAfterFirstPacket)
        #expect(peer.connections == 1)
        #expect(!result.mayBeRepeated)
        // A connect that got no answer may be repeated; a reset may not.
        let timedOut = ProbeResult(outcome: .failed, milliseconds: 3000, steps: [], peersTried: 1, peersAnswered: 0, problem: .timeout)
        let reset = ProbeResult(outcome: .failed, milliseconds: 30, steps: [], peersTried: 1, peersAnswered: 0, problem: .reset)
        #expect(timedOut.mayBeRepeated)
        #expect(!reset.mayBeRepeated)
        peer.listener.close()
    }

    /// A peer that resets each connection after its first data (SO_LINGER 0, as a censor's forged
    /// reset looks to the client), and reports the bytes each connection carried.
    final class ResettingPeer: Sendable {
        let listener: LoopbackListener
        let endpoint: TransportEndpoint
        private let received = Mutex<[Int]>([])
        var bytesPerConnection: [Int] { received.withLock { $0 } }

        init(_ address: String) throws {
            listener = try LoopbackListener(loopbackAddress: TransportEndpoint(ipv4: address.split(separator: ".").compactMap { UInt8($0) }, port: 0))
            endpoint = try TransportEndpoint(parsing: "\(address):\(listener.port)")
            Task { [self] in
                while let socket = try? await listener.accept() {
                    let bytes = (try? await socket.read(maximumCount: 65536))?.count ?? 0
                    received.withLock { $0.append(bytes) }
                    var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                    _ = setsockopt(socket.descriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
                    // No close(): its shutdown would send a FIN; the descriptor's close in deinit sends the RST.
                }
            }
        }
    }

    @Test func aResetHandshakeGetsOneSynOnlyConfirmConnect() async throws {
        let peer = try ResettingPeer("127.0.0.7")
        let line = try BridgeLine(validating: "obfs4 \(peer.endpoint) \(String(repeating: "A", count: 40)) cert=\(ConnectionAssistTests.cert) iat-mode=0",
                                  rules: Transports.argumentRules)
        let route = AssistRoute(transport: .obfs4, origin: .yours, bridges: [line], limits: .obfs4Default)
        let result = await (try AssistProbes(torOptions: [])).probe(route)
        #expect(result.outcome == .failed)
        #expect(result.problem == .reset)
        // The address still answers here (no censor): the reset alone names no technique.
        #expect(result.confirmation == .answered)
        #expect(!result.mayBeRepeated)
        for _ in 0..<100 where peer.bytesPerConnection.count < 2 { try await Task.sleep(for: .milliseconds(10)) }
        // Two connections: the probe's handshake (bytes), then the confirm connect (none: SYN-only).
        #expect(peer.bytesPerConnection.count == 2)
        #expect(peer.bytesPerConnection.first ?? 0 > 0)
        #expect(peer.bytesPerConnection.last == 0)
        peer.listener.close()
    }

    @Test func aPeerTheGateHoldsBackIsNoEvidence() async throws {
        // Two probes of the same ip:port at once: the gate lets one through, the other is not
        // made (endpoint-busy) and its probe is skipped rather than failed.
        let peer = try SilentPeer("127.0.0.6")
        let line = try BridgeLine(validating: "obfs4 \(peer.endpoint) \(String(repeating: "A", count: 40)) cert=\(ConnectionAssistTests.cert) iat-mode=0",
                                  rules: Transports.argumentRules)
        let route = AssistRoute(transport: .obfs4, origin: .yours, bridges: [line], limits: .obfs4Default)
        let probes = try AssistProbes(torOptions: [])
        async let first = probes.probe(route)
        // The first is connected (its key generation can take a while on a loaded machine).
        for _ in 0..<300 where EndpointGate.shared.inFlight(peer.endpoint, .probe) == 0 { try await Task.sleep(for: .milliseconds(10)) }
        try #require(EndpointGate.shared.inFlight(peer.endpoint, .probe) == 1)
        let second = await probes.probe(route)
        #expect(second.outcome == .skipped, "second probe: \(second)")
        let firstResult = await first
        #expect(firstResult.outcome == .failed, "first probe: \(firstResult)")
        #expect(peer.connections == 1)
        #expect(AssistProbes.problem(TransportError(code: .heldBack, kind: .cancelled, message: "")) == .heldBack)
        peer.listener.close()
    }
}
