import Foundation
import Testing
@testable import SnowflakeTransport

/// The broker's error string is its own text: the refusal error shows it with its control
/// characters made visible (issue 24, item 5), since it reaches logs, events files and terminals.
@Suite struct BrokerErrorTextTests {
    /// A stand-in broker (a scripted HTTP response, as HostileBrokerResponseTests use) whose poll
    /// answer is an error carrying a window title, a screen clear and a C1 CSI.
    @Test func aBrokersErrorReachesTheRefusalWithItsControlCharactersVisible() async throws {
        let body = #"{"error":"no proxies \u001b]0;pwned\u0007\u001b[2J\u009b31m"}"#
        let response = Array("HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
        let endpoint = try BrokerEndpoint(url: URL(string: "http://broker.invalid/")!)
        let rendezvous = BrokerRendezvous(endpoint: endpoint, connector: ScriptedConnector { ScriptedByteStream(pieces: [response]) })
        let answer = try await rendezvous.exchange(ClientPollRequest(offer: SessionDescription(type: "offer", sdp: "v=0"),
                                                                     nat: .unknown, fingerprint: ""))
        #expect(answer == .error("no proxies \u{1B}]0;pwned\u{07}\u{1B}[2J\u{9B}31m"))
        do {
            _ = try answer.requireAnswer()
            Issue.record("an error answer was taken for an answer")
        } catch {
            #expect(error.code == .brokerError)
            #expect(error.message == #"the broker refused: no proxies \u{1B}]0;pwned\u{7}\u{1B}[2J\u{9B}31m"#, "\(error.message.debugDescription)")
        }
    }
}
