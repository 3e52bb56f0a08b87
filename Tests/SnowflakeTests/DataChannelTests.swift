import PosternLinkSpec
import PosternTestSupport
import Foundation
import Glibc
import Testing
@testable import SnowflakeTransport

extension SnowflakeTestBed {
    var stunServer: (ip: String, port: UInt16) {
        let parts = self["TB_SNOWFLAKE_STUN"].dropFirst("stun:".count).split(separator: ":")
        return (String(parts.first ?? ""), parts.count > 1 ? UInt16(parts[1]) ?? 3478 : 3478)
    }

    var brokerRendezvous: BrokerRendezvous {
        get throws {
            BrokerRendezvous(endpoint: try BrokerEndpoint(url: try #require(URL(string: self["TB_SNOWFLAKE_BROKER_URL"]))),
                             connector: PlainTCPConnector())
        }
    }

    /// Our complete WebRTC path to a real proxy: broker, ICE, DTLS, SCTP, DCEP.
    func dialDataChannel() async throws -> WebRTCDataChannel {
        try await WebRTCDataChannel.dial(rendezvous: try brokerRendezvous, fingerprint: fingerprint, stunServer: stunServer,
                                         localAddresses: ["127.0.0.1"],
                                         poll: { try await $0.exchangeWaitingForAProxy($1) })
    }
}

@Suite struct DataChannelProtocolTests {
    @Test func localHostCandidatesAreRecognised() throws {
        func host(_ address: String, _ type: String = "host") -> ICECandidate {
            ICECandidate(foundation: "1", component: 1, priority: 1, address: address, port: 9, type: type)
        }
        for address in ["10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "127.0.0.1", "169.254.1.1",
                        "100.64.0.1", "100.127.255.255", "0.0.0.0", "::1", "fe80::1", "fd00::1"] {
            #expect(isLocalHostCandidate(host(address)), "\(address)")
        }
        for address in ["8.8.8.8", "172.32.0.1", "100.128.0.1", "192.0.2.1", "2001:db8::1"] {
            #expect(!isLocalHostCandidate(host(address)), "\(address)")
        }
        #expect(!isLocalHostCandidate(host("127.0.0.1", "srflx")), "only host candidates are filtered")
    }

    @Test func openMessageFollowsRFC8832() {
        let open = DataChannelProtocol.openMessage(label: "snowflake-0123456789abcdef")
        #expect(Array(open.prefix(12)) == [3, 0, 0, 0, 0, 0, 0, 0, 0, 26, 0, 0])
        #expect(String(decoding: open.dropFirst(12), as: UTF8.self) == "snowflake-0123456789abcdef")
        let label = DataChannelProtocol.randomLabel()
        #expect(label.hasPrefix("snowflake-") && label.count == 26)
        #expect(label.dropFirst(10).allSatisfy { "0123456789abcdef".contains($0) })
    }
}

/// The whole client path with no Go client code: our WebRTC data channel to Debian's
/// snowflake-proxy, which relays to the test bed's server (upstream kcp-go/smux) and the bridge.
@Suite(.serialized) struct DataChannelTestBedTests {
    @Test(.timeLimit(.minutes(2))) func tlsHandshakeWithTheBridgeThroughARealProxy() async throws {
        let bed = try SnowflakeTestBed.require()
        let channel = try await bed.dialDataChannel()
        let session = SnowflakeSession()
        try await session.start(carrier: channel)
        try await session.write(tlsClientHello())
        var reply: [UInt8] = []
        for try await piece in session.incoming {
            reply += piece
            if reply.count >= 100 { break }
        }
        await session.close()
        #expect(reply.count >= 100)
        #expect(reply.first == 0x16 && reply.count > 5 && reply[1] == 0x03 && reply[5] == 0x02)
    }

    /// Issue #24: a send waiting for room in a full SCTP send buffer read the socket pointer once
    /// and retried every 5 ms checking only for a failure, while `close()` freed the socket without
    /// storing one: the retries went to a freed usrsctp socket. The proxy here stops receiving our
    /// SCTP packets (they are dropped before DTLS), so it acknowledges nothing and the buffer fills;
    /// closing the channel must end the waiting send with `.closed`.
    @Test(.timeLimit(.minutes(3))) func aSendWaitingForRoomEndsWhenTheChannelCloses() async throws {
        let bed = try SnowflakeTestBed.require()
        let channel = try await bed.dialDataChannel()
        channel.core.state.withLock { $0.outboundDropped = true }
        let writer = Task { () async -> SnowflakeError? in
            let message = [UInt8](repeating: 0x55, count: DataChannelProtocol.maxMessage)
            do throws(SnowflakeError) {
                while true { try await channel.write(message) }
            } catch {
                return error
            }
        }
        let filling = ContinuousClock.now + .seconds(60)
        while channel.core.state.withLock({ $0.sendsWaitingForRoom }) == 0 {
            try #require(ContinuousClock.now < filling, "the SCTP send buffer did not fill")
            try await Task.sleep(for: .milliseconds(10))
        }
        channel.close()
        // Generous: the send notices on its next retry, 5 ms later.
        let ended = await withTaskGroup(of: SnowflakeError??.self) { group in
            group.addTask { await writer.value }
            group.addTask {
                try? await Task.sleep(for: .seconds(20))
                return .some(nil)
            }
            defer { group.cancelAll() }
            return await group.next() ?? nil
        }
        guard case .some(let error) = ended, let error else {
            writer.cancel()
            Issue.record("the waiting send had not ended 20 s after close")
            return
        }
        #expect(error.code == .closed, "\(error.code): \(error.message)")
        #expect(channel.core.state.withLock { $0.sendsWaitingForRoom } == 0)
    }

    /// Issue #24: DTLS completing while buffered datagrams drained after close opened an SCTP
    /// socket that nothing closed. After close, opening must be refused and the slot stay closed.
    @Test(.timeLimit(.minutes(2))) func noSCTPSocketOpensAfterClose() async throws {
        let bed = try SnowflakeTestBed.require()
        let channel = try await bed.dialDataChannel()
        channel.close()
        #expect(throws: SnowflakeError.self) { try channel.core.openSCTP() }
        let closed = channel.core.socket.withLock { slot -> Bool in
            if case .closed = slot { return true }
            return false
        }
        #expect(closed, "an SCTP socket was opened after the channel closed")
    }

    /// tor → our SOCKS stand-in → SnowflakeSession → SnowflakeDialer (options from the test bed's
    /// bridge line) → our WebRTC data channel → snowflake-proxy → server → bridge; bootstrap, then
    /// the 4 MiB blob with its sha256.
    @Test(.timeLimit(.minutes(3))) func torBootstrapsAndFetchesTheBlobThroughARealProxy() async throws {
        let bed = try SnowflakeTestBed.require()
        let options = try SnowflakeOptions(arguments: try BridgeLine(validating: bed["TB_BRIDGE_SNOWFLAKE"], rules: BridgeArgumentRulebook([SnowflakeArgumentRules()])).arguments)
        let dialer = SnowflakeDialer(options: options, connector: PlainTCPConnector(), localAddresses: ["127.0.0.1"],
                                     keepLocalAddresses: true)
        let listener = try SOCKSSessionListener { try await dialer.dial() }
        defer { listener.stop() }
        let result = try await runTorAndFetchBlob(bed: bed, transportPort: listener.port)
        #expect(result.blobOK)
        print("snowflake over WebRTC: tor bootstrapped in \(result.bootstrap), 4 MiB blob in \(result.fetch)")
    }

    /// The proxy goes away after bootstrap (we close its data channel); the session rendezvous
    /// with the other proxy, sends the same ClientID, and the blob still arrives intact.
    @Test(.timeLimit(.minutes(3))) func sessionMovesToAnotherProxy() async throws {
        let bed = try SnowflakeTestBed.require()
        let listener = try SOCKSSessionListener { try await bed.dialDataChannel() }
        defer { listener.stop() }
        let result = try await runTorAndFetchBlob(bed: bed, transportPort: listener.port) {
            await listener.abandonAllCarriers()
        }
        #expect(result.blobOK)
        #expect(await listener.mostCarriersUsed() >= 2)
        #expect(listener.sessionsStarted == 1)
        print("snowflake over WebRTC with a proxy change: bootstrap \(result.bootstrap), blob \(result.fetch)")
    }
}
