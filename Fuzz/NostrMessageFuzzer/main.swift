// Nostr relay → client messages (NIP-01) as the relay manager parses them
// (NostrRelayMessage(parsing:relay:)), and the event JSON it checks.
//
// Invariants, trapping when broken:
//   - an accepted EVENT carries a valid event (id and signature verify), whose JSON parses back to
//     the same event;
//   - an event the harness signs with fuzzer-chosen content, tags, kind and time, sent as
//     ["EVENT", sub, event], is accepted unchanged (our JSON writer and the id preimage agree with
//     the JSON reader on every string); the same event with its content altered is dropped.
import Foundation
import FuzzSupport
import PosternAppLayer

let keys = try! NostrKeyPair(secretKey: [UInt8](repeating: 0x11, count: 32))

func checkNostr(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    guard let mode = input.byte() else { return }
    if mode & 1 == 0 {
        let text = String(decoding: input.rest(), as: UTF8.self)
        guard case .event(_, let event, _)? = NostrRelayMessage(parsing: text, relay: "wss://relay.example") else { return }
        fuzzCheck(event.isValid, "an event that does not verify was accepted")
        fuzzCheck((try? NostrEvent(json: event.json)) == event, "an accepted event does not round-trip through its JSON")
        return
    }
    let kind = input.uint16() ?? 1
    let createdAt = (input.uint16() ?? 0) << 16 | (input.uint16() ?? 0)
    var tags: [[String]] = []
    for _ in 0..<Int(input.byte() ?? 0) % 4 {
        var tag: [String] = []
        for _ in 0..<Int(input.byte() ?? 0) % 4 { tag.append(String(decoding: input.chunk() ?? [], as: UTF8.self)) }
        tags.append(tag)
    }
    let subscription = String(decoding: input.chunk() ?? [], as: UTF8.self)
    let content = String(decoding: input.rest(), as: UTF8.self)
    guard let event = try? NostrEvent.signed(kind: kind, content: content, tags: tags, createdAt: createdAt, by: keys) else {
        fuzzCheck(false, "signing failed")
        return
    }
    let message = "[\"EVENT\",\(quoted(subscription)),\(event.json)]"
    guard case .event(let sub, let parsed, _)? = NostrRelayMessage(parsing: message, relay: "wss://relay.example") else {
        fuzzCheck(false, "a correctly signed event was dropped")
        return
    }
    fuzzCheck(sub == subscription && parsed == event, "the event arrived changed")
    let altered = NostrEvent(id: event.id, pubkey: event.pubkey, createdAt: event.createdAt, kind: event.kind, tags: event.tags,
                             content: event.content + "!", sig: event.sig)
    let forged = "[\"EVENT\",\(quoted(subscription)),\(altered.json)]"
    if case .event? = NostrRelayMessage(parsing: forged, relay: "wss://relay.example") {
        fuzzCheck(false, "an event with altered content was accepted")
    }
}

/// A JSON string by Foundation's writer (independent of the code under test).
func quoted(_ text: String) -> String {
    let data = try! JSONSerialization.data(withJSONObject: [text], options: [.fragmentsAllowed])
    return String(String(decoding: data, as: UTF8.self).dropFirst().dropLast())
}

runFuzzer(checkNostr)
