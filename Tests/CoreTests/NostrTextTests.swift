import Foundation
import Synchronization
import Testing
@testable import PosternAppLayer

/// The app layer's parser of public keys and the text and JSON lines `postern nostr` prints,
/// without the CLI; the inbox read with its count, timeout and interrupt.
@Suite struct NostrTextTests {
    @Test func aPublicKeyIs64HexDigitsKeptLowerCase() throws {
        let upper = String(repeating: "AB", count: 32)
        #expect(try NostrPublicKey(validating: upper).hex == String(repeating: "ab", count: 32))
        for bad in ["", String(repeating: "a", count: 63), String(repeating: "a", count: 65), String(repeating: "g", count: 64),
                    String(repeating: "\u{FF10}", count: 64)] {
            do throws(AppLayerError) {
                _ = try NostrPublicKey(validating: bad)
                Issue.record("'\(bad)' was accepted")
            } catch {
                #expect(error.code == .invalidPublicKey && error.kind == .usage && error.message == "a public key is 64 hex digits")
            }
        }
        // A validated key wraps as its hex does: the recipient opens it.
        let sender = NostrKeyPair.generate()
        let recipient = NostrKeyPair.generate()
        let wrap = try NIP17.giftWrap(message: "hi", from: sender, to: try NostrPublicKey(validating: recipient.publicKeyHex.uppercased()))
        #expect(try NIP17.unwrap(wrap, recipient: recipient).rumor.content == "hi")
    }

    @Test func oneFinalNewlineIsDroppedFromAMessage() {
        #expect(NIP17.messageText(fromInput: "hello\n") == "hello")
        #expect(NIP17.messageText(fromInput: "hello\r\n") == "hello")
        #expect(NIP17.messageText(fromInput: "two\nlines\n\n") == "two\nlines\n")
        #expect(NIP17.messageText(fromInput: "as is") == "as is")
    }

    @Test func sendAndReceiveLines() {
        let receipt = NostrSendReceipt(eventID: "00ff", relay: "wss://relay.example.org/path")
        #expect(receipt.text == "sent 00ff (accepted by wss://relay.example.org/path)")
        #expect(receipt.jsonLine == #"{"sent":"00ff","relay":"wss://relay.example.org/path"}"#)
        let message = PrivateMessage(sender: "abcd", createdAt: 1_700_000_000, content: "a \"quote\"/slash\nand a line")
        // One line per message: the content's newline is shown, not obeyed (the JSON keeps it exact).
        #expect(message.text == #"from abcd: a "quote"/slash\nand a line"#)
        #expect(message.jsonLine == #"{"from":"abcd","created_at":1700000000,"message":"a \"quote\"\/slash\nand a line"}"#)
        #expect(NostrKeyFile.defaultPath(inConfigDirectory: URL(fileURLWithPath: "/home/u/.config/postern")) == "/home/u/.config/postern/nostr-key")
    }

    @Test func readingStopsAtTheCountTheTimeoutOrAnInterrupt() async {
        let messages = (1...3).map { PrivateMessage(sender: "s\($0)", createdAt: $0, content: "m\($0)") }
        let (inbox, continuation) = AsyncStream.makeStream(of: PrivateMessage.self)
        messages.forEach { continuation.yield($0) }
        let seen = SeenMessages()
        let count = await PrivateMessage.read(inbox, limit: 2, timeout: .seconds(60), interrupted: { try? await Task.sleep(for: .seconds(60)) },
                                              received: { seen.append($0.content) })
        #expect(count == 2 && seen.values == ["m1", "m2"])

        let (silent, keepOpen) = AsyncStream.makeStream(of: PrivateMessage.self)
        let started = ContinuousClock.now
        #expect(await PrivateMessage.read(silent, limit: nil, timeout: .milliseconds(100), interrupted: { try? await Task.sleep(for: .seconds(60)) },
                                          received: { _ in }) == 0)
        #expect(ContinuousClock.now - started < .seconds(30), "the timeout ends the wait")
        let (quiet, stayOpen) = AsyncStream.makeStream(of: PrivateMessage.self)
        let interrupted = ContinuousClock.now
        #expect(await PrivateMessage.read(quiet, limit: nil, timeout: .seconds(60), interrupted: {}, received: { _ in }) == 0)
        #expect(ContinuousClock.now - interrupted < .seconds(30), "the interrupt ends the wait")
        keepOpen.finish()
        stayOpen.finish()
        continuation.finish()
    }
}

/// Values handed to a `@Sendable` callback, in order.
final class SeenMessages: Sendable {
    private let lock = Mutex<[String]>([])
    func append(_ value: String) { lock.withLock { $0.append(value) } }
    var values: [String] { lock.withLock { $0 } }
}
