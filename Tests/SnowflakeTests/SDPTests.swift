import Foundation
import Testing
@testable import SnowflakeTransport

@Suite struct SDPTests {
    @Test func pionOfferFromTheVectorsParsesAsAnAnswerWould() throws {
        let offer = try SessionDescription(serialized: GoVectors.shared.pionOfferSerialized)
        let parsed = try DataChannelAnswer(sdp: offer.sdp)
        #expect(parsed.setup == "actpass")
        #expect(parsed.fingerprintAlgorithm == "sha-256" && parsed.certificateDigest.count == 32)
        #expect(parsed.iceUsernameFragment.count >= 4 && parsed.icePassword.count >= 22)
        #expect(parsed.sctpPort == 5000)
        #expect(parsed.candidates.allSatisfy { $0.transport == "udp" && $0.port > 0 })
    }

    @Test func candidateLinesRoundTrip() throws {
        let text = "3835024012 1 udp 1694498815 127.0.0.1 45263 typ srflx raddr 0.0.0.0 rport 45263"
        let candidate = try ICECandidate(attributeValue: text)
        #expect(candidate.type == "srflx" && candidate.port == 45263 && candidate.relatedPort == 45263)
        #expect(candidate.attributeValue == text)
        #expect(throws: SnowflakeError.self) { try ICECandidate(attributeValue: "1 1 udp x 127.0.0.1 9 typ host") }
    }

    @Test func offerHasTheShapeProxiesExpect() {
        let offer = DataChannelOffer(sessionID: 42, iceUsernameFragment: "abcd", icePassword: String(repeating: "p", count: 22),
                                     certificateDigest: Array(0..<32),
                                     candidates: [ICECandidate(foundation: "1", component: 1, priority: 7, address: "127.0.0.1", port: 5, type: "srflx",
                                                               relatedAddress: "0.0.0.0", relatedPort: 5)])
        let lines = offer.sdp.components(separatedBy: "\r\n")
        #expect(lines.first == "v=0")
        #expect(lines.contains("m=application 9 UDP/DTLS/SCTP webrtc-datachannel"))
        #expect(lines.contains("a=setup:actpass"))
        #expect(lines.contains("a=fingerprint:sha-256 00:01:02:03:04:05:06:07:08:09:0A:0B:0C:0D:0E:0F:10:11:12:13:14:15:16:17:18:19:1A:1B:1C:1D:1E:1F"))
        #expect(lines.contains("a=candidate:1 1 udp 7 127.0.0.1 5 typ srflx raddr 0.0.0.0 rport 5"))
        #expect(lines.suffix(2) == ["a=end-of-candidates", ""])
    }
}

/// Our SDP offer through the test bed's broker to Debian's snowflake-proxy (pion): the proxy
/// accepts it (it only answers after SetRemoteDescription succeeded) and its answer parses.
@Suite(.serialized) struct SDPTestBedTests {
    @Test(.timeLimit(.minutes(2))) func realProxyAnswersOurOffer() async throws {
        let bed = try SnowflakeTestBed.require()
        let credentials = DataChannelOffer.randomCredentials()
        let offer = DataChannelOffer(iceUsernameFragment: credentials.usernameFragment, icePassword: credentials.password,
                                     certificateDigest: (0..<32).map { _ in UInt8.random(in: 0...255) },
                                     candidates: [ICECandidate(foundation: "1", component: 1, priority: 1_694_498_815,
                                                               address: "127.0.0.1", port: 9, type: "srflx",
                                                               relatedAddress: "0.0.0.0", relatedPort: 9)])
        let rendezvous = BrokerRendezvous(endpoint: try BrokerEndpoint(url: try #require(URL(string: bed["TB_SNOWFLAKE_BROKER_URL"]))),
                                          connector: PlainTCPConnector())
        let response = try await rendezvous.exchangeWaitingForAProxy(ClientPollRequest(offer: offer.sessionDescription, nat: .unknown,
                                                                       fingerprint: bed.fingerprint))
        let answer = try DataChannelAnswer(sdp: try response.requireAnswer().sdp)
        #expect(answer.setup == "active")
        #expect(answer.fingerprintAlgorithm == "sha-256" && answer.certificateDigest.count == 32)
        #expect(!answer.candidates.isEmpty)
        #expect(answer.sctpPort == 5000)
    }
}
