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
        let foundation = PionOfferShape.crc32(Array("srflx127.0.0.1udp4".utf8))
        #expect(lines.contains("a=candidate:\(foundation) 1 udp 1694498815 127.0.0.1 5 typ srflx raddr 0.0.0.0 rport 5"))
        #expect(lines.contains("a=candidate:\(foundation) 2 udp 1694498815 127.0.0.1 5 typ srflx raddr 0.0.0.0 rport 5"))
        #expect(lines.suffix(2) == ["a=end-of-candidates", ""])
    }

    /// Our offer against the offer pion (the reference client's WebRTC) made in the test bed
    /// (GoVectors), field by field: the same lines in the same order, the same fixed values, the
    /// same forms where values are per offer, and, for a candidate libnice gathered at the address
    /// and port of pion's, the same candidate lines.
    @Test func offerMatchesPionsFieldByField() throws {
        let pion = try SessionDescription(serialized: GoVectors.shared.pionOfferSerialized).sdp
        let pionLines = pion.components(separatedBy: "\r\n")
        let pionCandidate = try ICECandidate(attributeValue: String(try #require(pionLines.first { $0.hasPrefix("a=candidate:") })
            .dropFirst("a=candidate:".count)))
        // What libnice 0.1.21 reports for a server-reflexive candidate there: its own foundation and
        // priority, the host address as related address.
        let gathered = ICECandidate(foundation: "2", component: 1, priority: 1_679_819_775, address: pionCandidate.address,
                                    port: pionCandidate.port, type: "srflx", relatedAddress: "127.0.0.1",
                                    relatedPort: pionCandidate.port)
        let credentials = DataChannelOffer.randomCredentials()
        let before = UInt64(Date().timeIntervalSince1970)
        let ours = DataChannelOffer(iceUsernameFragment: credentials.usernameFragment, icePassword: credentials.password,
                                    certificateDigest: (0..<32).map { _ in UInt8.random(in: 0...255) }, candidates: [gathered]).sdp
        let after = UInt64(Date().timeIntervalSince1970)
        let ourLines = ours.components(separatedBy: "\r\n")

        // The key of each line ("v", "o", "a=fingerprint", ...), in order.
        func key(_ line: String) -> String {
            guard line.hasPrefix("a=") else { return String(line.prefix(1)) }
            return String(line.prefix { $0 != ":" })
        }
        #expect(ourLines.map(key) == pionLines.map(key))
        func value(_ lines: [String], _ key: String) -> String? {
            lines.first { $0.hasPrefix(key + ":") || $0 == key || (key.count == 1 && $0.hasPrefix(key + "=")) }
        }
        // Lines whose whole text is the same in every offer.
        for fixed in ["v", "s", "t", "a=extmap-allow-mixed", "a=group", "m", "c", "a=setup", "a=mid", "a=sendrecv",
                      "a=sctp-port", "a=end-of-candidates"] {
            #expect(value(ourLines, fixed) != nil && value(ourLines, fixed) == value(pionLines, fixed), "\(fixed)")
        }
        // o=- <session id < 2^63> <session version: the Unix time of the offer> IN IP4 0.0.0.0
        let ourOrigin = try #require(value(ourLines, "o")).split(separator: " ")
        let pionOrigin = try #require(value(pionLines, "o")).split(separator: " ")
        #expect(ourOrigin.count == 6 && pionOrigin.count == 6)
        #expect(ourOrigin[0] == pionOrigin[0] && ourOrigin[3...] == pionOrigin[3...])
        for origin in [ourOrigin, pionOrigin] {
            #expect(UInt64(origin[1]).map { $0 < 1 << 63 } == true)
        }
        let pionVersion = try #require(UInt64(pionOrigin[2]))
        #expect(pionVersion > 1_700_000_000 && pionVersion < after, "pion's version is a Unix time")
        let ourVersion = try #require(UInt64(ourOrigin[2]))
        #expect(ourVersion >= before && ourVersion <= after)
        // a=fingerprint:sha-256 followed by 32 upper-case hex bytes separated by colons.
        for lines in [ourLines, pionLines] {
            let fingerprint = try #require(value(lines, "a=fingerprint")).split(separator: " ")
            #expect(fingerprint.first == "a=fingerprint:sha-256")
            let bytes = fingerprint.last?.split(separator: ":") ?? []
            #expect(bytes.count == 32 && bytes.allSatisfy { $0.count == 2 && $0.allSatisfy { "0123456789ABCDEF".contains($0) } })
        }
        // ICE credentials: the same lengths and alphabet (letters only).
        for attribute in ["a=ice-ufrag", "a=ice-pwd"] {
            let ourValue = try #require(value(ourLines, attribute)).dropFirst(attribute.count + 1)
            let pionValue = try #require(value(pionLines, attribute)).dropFirst(attribute.count + 1)
            #expect(ourValue.count == pionValue.count, "\(attribute)")
            #expect((ourValue + pionValue).allSatisfy { $0.isASCII && $0.isLetter }, "\(attribute)")
        }
        // Candidates: pion's lines exactly (foundation, both components, priority, raddr 0.0.0.0).
        #expect(ourLines.filter { $0.hasPrefix("a=candidate:") } == pionLines.filter { $0.hasPrefix("a=candidate:") })
    }

    @Test func pionsFoundationsAndPrioritiesAreReproduced() {
        // Go's crc32.ChecksumIEEE("srflx127.0.0.1udp4"), as in the vectors' pion offer.
        #expect(PionOfferShape.crc32(Array("srflx127.0.0.1udp4".utf8)) == 3_835_024_012)
        #expect(PionOfferShape.crc32([]) == 0)
        #expect(PionOfferShape.priority(type: "host") == 2_130_706_431)
        #expect(PionOfferShape.priority(type: "srflx") == 1_694_498_815)
        let host = ICECandidate(foundation: "1", component: 1, priority: 2_015_364_095, address: "2001:db8::1", port: 9, type: "host")
        #expect(PionOfferShape.candidate(host, component: 1).foundation
                == String(PionOfferShape.crc32(Array("host2001:db8::1udp6".utf8))))
        #expect(PionOfferShape.candidate(host, component: 1).relatedAddress == nil)
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
