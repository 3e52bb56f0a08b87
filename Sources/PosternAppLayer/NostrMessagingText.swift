import Foundation
import PosternSystem

extension NostrKeyFile {
    /// Where `postern nostr` keeps its key in a configuration directory.
    public static func defaultPath(inConfigDirectory directory: URL) -> String {
        directory.appendingPathComponent("nostr-key").path
    }
}

/// A private message a relay accepted, as `postern nostr send` reports it.
public struct NostrSendReceipt: Hashable, Sendable {
    /// The gift wrap's event ID.
    public let eventID: String
    /// The relay that accepted it.
    public let relay: String

    /// The gift wrap `eventID` that `relay` accepted.
    public init(eventID: String, relay: String) {
        self.eventID = eventID
        self.relay = relay
    }

    /// "sent ID (accepted by RELAY)".
    public var text: String { "sent \(eventID) (accepted by \(relay))" }

    /// `{"sent":"ID","relay":"RELAY"}`, one line, slashes unescaped.
    public var jsonLine: String {
        #"{"sent":\#(NostrJSONLine.string(eventID)),"relay":\#(NostrJSONLine.string(relay, escapingSlashes: false))}"#
    }
}

extension PrivateMessage {
    /// "from SENDER: CONTENT", on one line: the content is the sender's, so its control
    /// characters (an escape sequence, a newline that would start a line from someone else) are
    /// made visible (`PlainText.visible`).
    public var text: String { "from \(PlainText.visible(sender)): \(PlainText.visible(content))" }

    /// `{"from":"SENDER","created_at":N,"message":"CONTENT"}`, one line (the content as JSON
    /// escapes it, `/` as `\/`).
    public var jsonLine: String {
        #"{"from":\#(NostrJSONLine.string(sender)),"created_at":\#(createdAt),"message":\#(NostrJSONLine.string(content))}"#
    }

    /// Reads `inbox`, giving each message to `received`, until `limit` messages came (no limit
    /// when nil; none read for a limit of 0 or less), `timeout` passed or `interrupted` returned
    /// (a signal, say); the number read.
    public static func read(_ inbox: AsyncStream<PrivateMessage>, limit: Int?, timeout: Duration,
                            interrupted: @escaping @Sendable () async -> Void,
                            received: @escaping @Sendable (PrivateMessage) -> Void) async -> Int {
        if let limit, limit <= 0 { return 0 }
        let reader = Task { () -> Int in
            var count = 0
            for await message in inbox {
                count += 1
                received(message)
                if let limit, count >= limit { break }
            }
            return count
        }
        let interrupter = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await interrupted() }
                group.addTask { try? await Task.sleep(for: timeout) }
                await group.next()
                group.cancelAll()
            }
            reader.cancel()
        }
        let count = await reader.value
        interrupter.cancel()
        return count
    }
}

/// The one-line JSON objects are written out key by key: their keys come in a fixed order, which
/// JSONEncoder does not keep.
enum NostrJSONLine {
    /// `text` as a JSON string, `/` as `\/` unless `escapingSlashes` is false. Every control
    /// character (`PlainText.isControlCharacter`) is a `\u` escape, not only the C0 ones JSON
    /// requires (JSONEncoder left DEL, C1 and the bidirectional marks raw): a line printed to a
    /// terminal cannot steer it, and a JSON reader still gets the exact text.
    static func string(_ text: String, escapingSlashes: Bool = true) -> String {
        QuotedText.quoted(text) { scalar in
            if scalar == "/" { return escapingSlashes ? "\\/" : nil }
            return PlainText.isControlCharacter(scalar) ? QuotedText.jsonUnicodeEscape(scalar) : nil
        }
    }
}
