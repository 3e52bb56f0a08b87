import Foundation
import Testing
@testable import SnowflakeTransport

/// libnice (our ICE agent, controlling) against Debian's snowflake-proxy (pion, controlled) on the
/// test bed's loopback, STUN from the test bed's coturn: the pair becomes ready and the proxy, which
/// answered setup:active, starts DTLS by sending us its ClientHello.
@Suite(.serialized) struct ICETestBedTests {
    @Test(.timeLimit(.minutes(2))) func iceConnectsToARealProxyAndDTLSBegins() async throws {
        let bed = try SnowflakeTestBed.require()
        let stun = bed["TB_SNOWFLAKE_STUN"].dropFirst("stun:".count).split(separator: ":")
        let agent = try ICEAgent(stunServer: (String(stun[0]), UInt16(stun[1]) ?? 3478), localAddresses: ["127.0.0.1"])
        defer { agent.close() }
        let local = try await agent.gather()
        #expect(!local.candidates.isEmpty)
        let offer = DataChannelOffer(iceUsernameFragment: local.usernameFragment, icePassword: local.password,
                                     certificateDigest: (0..<32).map { _ in UInt8.random(in: 0...255) },
                                     candidates: local.candidates)
        let rendezvous = BrokerRendezvous(endpoint: try BrokerEndpoint(url: try #require(URL(string: bed["TB_SNOWFLAKE_BROKER_URL"]))),
                                          connector: PlainTCPConnector())
        let response = try await rendezvous.exchangeWaitingForAProxy(ClientPollRequest(offer: offer.sessionDescription, nat: .unknown,
                                                                       fingerprint: bed.fingerprint))
        let answer = try DataChannelAnswer(sdp: try response.requireAnswer().sdp)
        try await agent.connect(usernameFragment: answer.iceUsernameFragment, password: answer.icePassword,
                                candidates: answer.candidates)
        #expect(agent.state == .ready)
        var first: [UInt8]?
        for await datagram in agent.datagrams {
            first = datagram
            break
        }
        let record = try #require(first)
        // DTLS record: content type handshake (22), version 0xFEFD or 0xFEFF, handshake type 1.
        #expect(record.count > 13)
        #expect(record[0] == 22 && record[1] == 0xfe && (record[2] == 0xfd || record[2] == 0xff))
        #expect(record[13] == 1)
    }
}

/// ICE (libnice) + DTLS (NSS shaped like Firefox's WebRTC, we are the server) against a real pion proxy: the handshake
/// completes, the proxy's certificate matches the answer's fingerprint, and the first application
/// data is the proxy's SCTP INIT to port 5000.
@Suite(.serialized) struct DTLSTestBedTests {
    @Test(.timeLimit(.minutes(2))) func dtlsHandshakeWithARealProxyCarriesSCTP() async throws {
        let bed = try SnowflakeTestBed.require()
        let stun = bed["TB_SNOWFLAKE_STUN"].dropFirst("stun:".count).split(separator: ":")
        let agent = try ICEAgent(stunServer: (String(stun[0]), UInt16(stun[1]) ?? 3478), localAddresses: ["127.0.0.1"])
        defer { agent.close() }
        let dtls = try DTLSServer()
        let local = try await agent.gather()
        let offer = DataChannelOffer(iceUsernameFragment: local.usernameFragment, icePassword: local.password,
                                     certificateDigest: dtls.certificateDigest, candidates: local.candidates)
        let rendezvous = BrokerRendezvous(endpoint: try BrokerEndpoint(url: try #require(URL(string: bed["TB_SNOWFLAKE_BROKER_URL"]))),
                                          connector: PlainTCPConnector())
        let response = try await rendezvous.exchangeWaitingForAProxy(ClientPollRequest(offer: offer.sessionDescription, nat: .unknown,
                                                                                       fingerprint: bed.fingerprint))
        let answer = try DataChannelAnswer(sdp: try response.requireAnswer().sdp)
        try dtls.expectPeerCertificate(sha256: answer.certificateDigest)
        try await agent.connect(usernameFragment: answer.iceUsernameFragment, password: answer.icePassword,
                                candidates: answer.candidates)
        var applicationData: [UInt8]?
        for await datagram in agent.datagrams {
            let (send, data) = try dtls.receive(datagram)
            for out in send {
                #expect(out.count <= DTLSServer.mtu)
                try agent.send(out)
            }
            if let first = data.first {
                applicationData = first
                break
            }
        }
        #expect(dtls.handshakeComplete)
        #expect(dtls.peerCertificateDigest == answer.certificateDigest)
        let sctp = try #require(applicationData)
        // SCTP common header: source and destination port 5000, then an INIT chunk (type 1).
        #expect(sctp.count >= 16)
        #expect(Array(sctp.prefix(4)) == [0x13, 0x88, 0x13, 0x88])
        #expect(sctp[12] == 1)
    }
}
