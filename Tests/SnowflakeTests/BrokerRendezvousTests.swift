import Foundation
import Testing
import TransportWire
@testable import SnowflakeTransport

/// The test bed's facts (scripts/testbed env file named by POSTERN_TESTBED_ENV, as for the
/// integration tests). Tests that use it run inside the test bed's namespace.
struct SnowflakeTestBed: Sendable {
    let values: [String: String]

    static let shared: SnowflakeTestBed? = {
        guard let path = ProcessInfo.processInfo.environment["POSTERN_TESTBED_ENV"],
              let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            var value = String(line[line.index(after: equals)...])
            // printf %q escapes spaces with backslashes and may quote as $'...'.
            if value.hasPrefix("$'") && value.hasSuffix("'") { value = String(value.dropFirst(2).dropLast()) }
            value = value.replacingOccurrences(of: "\\ ", with: " ")
            values[String(line[..<equals])] = value
        }
        return SnowflakeTestBed(values: values)
    }()

    /// The snowflake part of the test bed, or a recorded failure when it should be there.
    static func require() throws -> SnowflakeTestBed {
        let bed = try #require(shared, "run through `make test` (scripts/run-tests.sh), which starts the test bed")
        try #require(bed.values["TB_SNOWFLAKE"] == "1", "the test bed runs without its snowflake stack (see its warning)")
        return bed
    }

    subscript(key: String) -> String { values[key] ?? "" }

    var fingerprint: String {
        self["TB_BRIDGE_SNOWFLAKE"].split(separator: " ").first { $0.hasPrefix("fingerprint=") }
            .map { String($0.dropFirst("fingerprint=".count)) } ?? ""
    }
}

@Suite struct BrokerURLTests {
    func rendezvous(_ url: String, fronts: [String] = []) throws -> BrokerRendezvous {
        BrokerRendezvous(endpoint: try BrokerEndpoint(url: try #require(URL(string: url)), fronts: fronts),
                         connector: PlainTCPConnector())
    }

    @Test func clientPathResolvesRelativeToTheBrokerURL() throws {
        #expect(try rendezvous("https://host/").resolve("client").path == "/client")
        #expect(try rendezvous("https://host/broker/").resolve("client").path == "/broker/client")
        #expect(try rendezvous("https://host/broker").resolve("client").path == "/client")
        #expect(try rendezvous("http://host:8080/").resolve("amp/client/0x/y").path == "/amp/client/0x/y")
    }

    @Test func withoutFrontsTheBrokerHostIsDialledAndSent() throws {
        let target = try rendezvous("https://broker.example/").resolve("client")
        #expect(target == .init(path: "/client", hostHeader: "broker.example", connectHost: "broker.example",
                                connectPort: 443, tlsServerName: "broker.example"))
        let plain = try rendezvous("http://127.0.5.1:8080/").resolve("client")
        #expect(plain.hostHeader == "127.0.5.1:8080" && plain.connectPort == 8080 && plain.tlsServerName == nil)
    }

    @Test func frontingDialsTheFrontAndKeepsTheBrokerInHost() throws {
        let target = try rendezvous("https://1098762253.rsc.cdn77.org/", fronts: ["www.cdn77.com"]).resolve("client")
        #expect(target.connectHost == "www.cdn77.com")
        #expect(target.tlsServerName == "www.cdn77.com")
        #expect(target.connectPort == 443)
        #expect(target.hostHeader == "1098762253.rsc.cdn77.org")
        // As upstream, the front replaces host and port: the broker URL's port is not kept.
        let ported = try rendezvous("http://broker.invalid:8080/", fronts: ["127.0.5.1"]).resolve("client")
        #expect(ported.connectPort == 80 && ported.hostHeader == "broker.invalid:8080")
    }

    @Test func rejectsUnusableURLs() throws {
        #expect(throws: SnowflakeError.self) { try BrokerEndpoint(url: URL(string: "ftp://host/")!) }
        #expect(throws: SnowflakeError.self) { try BrokerEndpoint(url: URL(string: "https://u:p@host/")!) }
        #expect(throws: SnowflakeError.self) {
            try rendezvous("https://host/", fronts: ["front:notaport"]).resolve("client")
        }
    }

    @Test func requestIsPlainHTTP11WithTheGivenHost() {
        let request = HTTPRequest(method: "POST", path: "/client", host: "broker.example", body: Array("1.0\n{}".utf8))
        #expect(String(decoding: request.encoded, as: UTF8.self) ==
            "POST /client HTTP/1.1\r\nHost: broker.example\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: 6\r\nAccept-Encoding: gzip\r\n\r\n1.0\n{}")
    }

    /// The request no longer asks the server to close, so a response without a body must end at
    /// its head: a kept-alive connection would otherwise be read until the deadline.
    @Test func responsesWithoutABodyEndAtTheHead() throws {
        for status in [204, 304] {
            var reader = HTTP1ResponseReader(bodyLimit: 100)
            let response = try reader.append(Array("HTTP/1.1 \(status) X\r\nServer: t\r\n\r\n".utf8))
            #expect(response?.status == status && response?.body.isEmpty == true)
        }
        // An interim 100 ends at its head too; the final answer follows it on the same connection
        // (the shared reader skips it, as Go's client does, since issue #25).
        var interim = HTTP1ResponseReader(bodyLimit: 100)
        #expect(try interim.append(Array("HTTP/1.1 100 Continue\r\nServer: t\r\n\r\n".utf8)) == nil)
        #expect(try interim.append(Array("HTTP/1.1 204 No Content\r\n\r\n".utf8))?.status == 204)
        var framed = HTTP1ResponseReader(bodyLimit: 100)
        #expect(try framed.append(Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8))?.body == Array("ok".utf8))
        var unframed = HTTP1ResponseReader(bodyLimit: 100)
        #expect(try unframed.append(Array("HTTP/1.1 200 OK\r\n\r\nok".utf8)) == nil)
    }

    @Test func httpsNeedsATLSConnector() async throws {
        let r = try rendezvous("https://127.0.5.1/")
        await #expect(throws: SnowflakeError.self) {
            try await r.exchange(ClientPollRequest(serializedOffer: "{}", nat: .unknown, fingerprint: ""))
        }
    }
}

/// Against the test bed's broker (ours, with upstream's message codecs) and Debian's snowflake-proxy:
/// the pion offer from the vectors is answered by a real proxy.
@Suite(.serialized) struct BrokerRendezvousTestBedTests {
    func offerRequest(_ bed: SnowflakeTestBed, fingerprint: String? = nil) -> ClientPollRequest {
        ClientPollRequest(serializedOffer: GoVectors.shared.pionOfferSerialized, nat: .unknown,
                          fingerprint: fingerprint ?? bed.fingerprint)
    }

    func checkAnswer(_ response: ClientPollResponse) throws {
        let answer = try response.requireAnswer()
        #expect(answer.type == "answer")
        // The proxy (pion) answers setup:active: it will be the DTLS client.
        #expect(answer.sdp.contains("a=setup:active"))
        #expect(answer.sdp.contains("a=ice-ufrag:"))
        #expect(answer.sdp.contains("webrtc-datachannel"))
    }

    @Test(.timeLimit(.minutes(2))) func httpPollGetsAProxyAnswer() async throws {
        let bed = try SnowflakeTestBed.require()
        let rendezvous = BrokerRendezvous(endpoint: try BrokerEndpoint(url: try #require(URL(string: bed["TB_SNOWFLAKE_BROKER_URL"]))),
                                          connector: PlainTCPConnector())
        try checkAnswer(try await rendezvous.exchangeWaitingForAProxy(offerRequest(bed)))
    }

    @Test(.timeLimit(.minutes(2))) func ampPollGetsAProxyAnswerThroughArmor() async throws {
        let bed = try SnowflakeTestBed.require()
        let rendezvous = BrokerRendezvous(endpoint: try BrokerEndpoint(url: try #require(URL(string: bed["TB_SNOWFLAKE_BROKER_URL"]))),
                                          connector: PlainTCPConnector())
        try checkAnswer(try await rendezvous.exchangeWaitingForAProxy(offerRequest(bed), amp: true))
    }

    @Test func frontedPollReachesTheBrokerThroughTheFront() async throws {
        let bed = try SnowflakeTestBed.require()
        let broker = try #require(URL(string: bed["TB_SNOWFLAKE_BROKER_URL"]))
        // The URL names a host that cannot resolve (the namespace has no DNS): only a client that
        // dials the front, not the URL host, reaches the broker.
        let fronted = try #require(URL(string: "http://snowflake-broker.invalid:\(broker.port ?? 80)/"))
        let rendezvous = BrokerRendezvous(endpoint: try BrokerEndpoint(url: fronted, fronts: ["\(broker.host!):\(broker.port ?? 80)"]),
                                          connector: PlainTCPConnector())
        // An unknown fingerprint is answered at once, without occupying a proxy.
        let response = try await rendezvous.exchange(offerRequest(bed, fingerprint: String(repeating: "0", count: 40)))
        #expect(response == .error("unknown bridge fingerprint"))
        let direct = BrokerRendezvous(endpoint: try BrokerEndpoint(url: fronted), connector: PlainTCPConnector(timeoutSeconds: 3))
        await #expect(throws: SnowflakeError.self) {
            try await direct.exchange(offerRequest(bed))
        }
    }

    @Test func brokerRejectsAMalformedPollInTheErrorField() async throws {
        let bed = try SnowflakeTestBed.require()
        let rendezvous = BrokerRendezvous(endpoint: try BrokerEndpoint(url: try #require(URL(string: bed["TB_SNOWFLAKE_BROKER_URL"]))),
                                          connector: PlainTCPConnector())
        let response = try await rendezvous.exchange(ClientPollRequest(serializedOffer: "", nat: .unknown, fingerprint: bed.fingerprint))
        #expect(response == .error("no supplied offer"))
        #expect(throws: SnowflakeError.self) { try response.requireAnswer() }
    }
}

extension BrokerRendezvous {
    /// A poll that waits for a free proxy as the real client does (it retries every 10 s; here every
    /// second): the test bed's two 2.5.1 proxies serve one rendezvous each at a time and stay busy
    /// for ~20 s after a rendezvous whose DataChannel never opens, and tests run in parallel.
    func exchangeWaitingForAProxy(_ request: ClientPollRequest, amp: Bool = false,
                                  deadline: Duration = .seconds(90)) async throws -> ClientPollResponse {
        let start = ContinuousClock.now
        while true {
            let response = amp ? try await exchangeAMP(request) : try await exchange(request)
            guard response == .error(ClientPollResponse.noProxies), ContinuousClock.now - start < deadline else {
                return response
            }
            try await Task.sleep(for: .seconds(1))
        }
    }
}
