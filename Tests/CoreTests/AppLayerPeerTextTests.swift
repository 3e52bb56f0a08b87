import Foundation
import PosternSystem
import Testing
import TransportWire
@testable import PosternAppLayer

/// The app layer's text forms and errors show a peer's text with its control characters made
/// visible (issue 24, item 5), so an app that prints them gets safe text too. The CLI's own tests
/// (CLITests.PeerTextTests) run the same peers on loopback against `postern`.
@Suite struct AppLayerPeerTextTests {
    static let escapes = "\u{1B}]0;pwned\u{07}\u{1B}[2J"
    static let shown = #"\u{1B}]0;pwned\u{7}\u{1B}[2J"#

    /// A relay's OK false, NOTICE and CLOSED texts are for people: visible as parsed. An event's
    /// content is the sender's and stays exact until its text form.
    @Test func aRelaysTextsArriveVisible() throws {
        let escaped = #"\u001b]0;pwned\u0007\u001b[2J"#
        let ok = NostrRelayMessage(parsing: #"["OK","ab",false,"blocked: \#(escaped)"]"#, relay: "ws://relay.test")
        #expect(ok == .ok(eventID: "ab", accepted: false, message: "blocked: \(Self.shown)", relay: "ws://relay.test"))
        let notice = NostrRelayMessage(parsing: #"["NOTICE","\#(escaped)"]"#, relay: "ws://relay.test")
        #expect(notice == .notice(Self.shown, relay: "ws://relay.test"))
        let closed = NostrRelayMessage(parsing: #"["CLOSED","s","\#(escaped)"]"#, relay: "ws://relay.test")
        #expect(closed == .closed(subscription: "s", message: Self.shown, relay: "ws://relay.test"))

        let message = PrivateMessage(sender: String(repeating: "a", count: 64), createdAt: 1,
                                     content: "hi \(Self.escapes)\nfrom \(String(repeating: "0", count: 64)): forged")
        #expect(message.text == #"from \#(message.sender): hi \#(Self.shown)\nfrom 0000000000000000000000000000000000000000000000000000000000000000: forged"#)
        #expect(message.jsonLine.contains(#"\u001b]0;pwned\u0007"#), "\(message.jsonLine)")
    }

    /// `nostr listen --json` keeps the exact text, but JSONEncoder leaves DEL, C1 and the bidi
    /// marks raw (only C0 must be escaped in JSON): they are written as \u escapes, which parse
    /// back to the same text.
    @Test func aMessagesJSONLineHasNoRawControlCharactersAndParsesBackExactly() throws {
        let content = "a\u{7F}b\u{9B}31m\u{202E}c\u{1B}]0;x\u{07}\n\u{2028}é🇮🇷"
        let line = PrivateMessage(sender: "abcd", createdAt: 1, content: content).jsonLine
        #expect(!PlainText.containsControlCharacters(line), "\(line.debugDescription)")
        #expect(line.contains(#"a\u007fb\u009b31m\u202ec\u001b]0;x\u0007\n\u2028é🇮🇷"#), "\(line.debugDescription)")
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(parsed["message"] as? String == content)
    }

    /// The status line of a refused WebSocket upgrade and a close frame's reason.
    @Test func aWebSocketServersStatusLineAndCloseReasonAreVisible() {
        do {
            var reader = WebSocketHandshakeReader(key: "x")
            _ = try reader.feed(Array("HTTP/1.1 403 \(Self.escapes)\r\n\r\n".utf8))
            Issue.record("a 403 was accepted")
        } catch {
            #expect(error.message == "WebSocket handshake refused: HTTP/1.1 403 \(Self.shown)", "\(error.message.debugDescription)")
        }
        #expect(WebSocketCloseStatus(code: 1000, reason: "bye\(Self.escapes)").description == "1000 bye\(Self.shown)")
    }

    /// A directory's rejected field, quoted in the rejection.
    @Test func aDirectorysRejectedFieldIsVisible() {
        let csv = "Relay URL,Latitude,Longitude\nrelay.example.org,48\(Self.escapes),2.35\n"
        do {
            _ = try GeoRelayCSV.parse(Data(csv.utf8))
            Issue.record("a latitude with escapes was accepted")
        } catch {
            #expect(error.message == "geo relay directory rejected: line 2: latitude '48\(Self.shown)' is not a number in -90...90",
                    "\(error.message.debugDescription)")
        }
    }
}
