import PosternSystem
import PosternCrypto
import Foundation
import PosternTor

/// A NIP-01 event. `sig` is empty for an unsigned rumor (NIP-59).
public struct NostrEvent: Sendable, Hashable {
    /// The event's ID: SHA-256 of its NIP-01 serialisation, 64 hex digits.
    public let id: String
    /// The author's x-only public key, 64 hex digits.
    public let pubkey: String
    /// Unix time in seconds, as the author gave it.
    public let createdAt: Int
    /// The NIP-01 kind (1059: gift wrap, 13: seal, 14: a private message's rumor).
    public let kind: Int
    /// The tags, each a name and values.
    public let tags: [[String]]
    /// The content (a NIP-44 payload for seals and gift wraps).
    public let content: String
    /// The BIP-340 signature of `id`, 128 hex digits; empty for a rumor.
    public let sig: String

    /// The NIP-01 id preimage: [0, pubkey, created_at, kind, tags, content], no whitespace.
    static func idPreimage(pubkey: String, createdAt: Int, kind: Int, tags: [[String]], content: String) -> String {
        let tagsJSON = "[" + tags.map { "[" + $0.map(NostrJSON.quote).joined(separator: ",") + "]" }.joined(separator: ",") + "]"
        return "[0,\(NostrJSON.quote(pubkey)),\(createdAt),\(kind),\(tagsJSON),\(NostrJSON.quote(content))]"
    }

    static func computeID(pubkey: String, createdAt: Int, kind: Int, tags: [[String]], content: String) -> String {
        Hex.encode(Digest.sha256(Array(idPreimage(pubkey: pubkey, createdAt: createdAt, kind: kind, tags: tags, content: content).utf8)))
    }

    /// A signed event.
    public static func signed(kind: Int, content: String, tags: [[String]] = [], createdAt: Int = Int(Date().timeIntervalSince1970),
                              by keys: NostrKeyPair) throws(AppLayerError) -> NostrEvent {
        let id = computeID(pubkey: keys.publicKeyHex, createdAt: createdAt, kind: kind, tags: tags, content: content)
        let signature = try keys.sign(Hex.decode(id)!)
        return NostrEvent(id: id, pubkey: keys.publicKeyHex, createdAt: createdAt, kind: kind, tags: tags, content: content,
                          sig: Hex.encode(signature))
    }

    /// An unsigned event with its id (a NIP-59 rumor).
    public static func unsigned(kind: Int, content: String, tags: [[String]], createdAt: Int, pubkey: String) -> NostrEvent {
        NostrEvent(id: computeID(pubkey: pubkey, createdAt: createdAt, kind: kind, tags: tags, content: content),
                   pubkey: pubkey, createdAt: createdAt, kind: kind, tags: tags, content: content, sig: "")
    }

    /// True when the id matches the content and the signature verifies.
    public var isValid: Bool {
        guard id == Self.computeID(pubkey: pubkey, createdAt: createdAt, kind: kind, tags: tags, content: content),
              let signature = Hex.decode(sig), let message = Hex.decode(id), let key = Hex.decode(pubkey) else { return false }
        return NostrKeyPair.verify(signature: signature, message: message, publicKey: key)
    }

    /// The event as one NIP-01 JSON object.
    public var json: String {
        var fields = ["\"id\":\(NostrJSON.quote(id))", "\"pubkey\":\(NostrJSON.quote(pubkey))", "\"created_at\":\(createdAt)",
                      "\"kind\":\(kind)",
                      "\"tags\":[" + tags.map { "[" + $0.map(NostrJSON.quote).joined(separator: ",") + "]" }.joined(separator: ",") + "]",
                      "\"content\":\(NostrJSON.quote(content))"]
        if !sig.isEmpty { fields.append("\"sig\":\(NostrJSON.quote(sig))") }
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// An event of these fields as given (not checked: ``isValid`` checks the ID and signature).
    public init(id: String, pubkey: String, createdAt: Int, kind: Int, tags: [[String]], content: String, sig: String) {
        self.id = id
        self.pubkey = pubkey
        self.createdAt = createdAt
        self.kind = kind
        self.tags = tags
        self.content = content
        self.sig = sig
    }

    /// The event of a parsed JSON object; throws `invalidEvent` when a field is missing or of the wrong type.
    public init(jsonObject: Any) throws(AppLayerError) {
        guard let object = jsonObject as? [String: Any],
              let id = object["id"] as? String, let pubkey = object["pubkey"] as? String,
              let createdAt = (object["created_at"] as? NSNumber)?.intValue, let kind = (object["kind"] as? NSNumber)?.intValue,
              let tags = object["tags"] as? [[String]], let content = object["content"] as? String else {
            throw AppLayerError(.invalidEvent, "not a Nostr event object")
        }
        self.init(id: id, pubkey: pubkey, createdAt: createdAt, kind: kind, tags: tags, content: content,
                  sig: object["sig"] as? String ?? "")
    }

    /// The event of a JSON text; throws `invalidEvent` when it is not an event object.
    public init(json: String) throws(AppLayerError) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) else {
            throw AppLayerError(.invalidEvent, "event is not JSON")
        }
        try self.init(jsonObject: object)
    }
}

enum NostrJSON {
    /// NIP-01 string escaping: \" \\ \n \r \t \b \f; other control characters as \u00XX; the rest
    /// verbatim (no escaped slashes, no \u for non-ASCII).
    static func quote(_ text: String) -> String {
        QuotedText.quoted(text) { scalar in
            switch scalar {
            case "\u{08}": "\\b"
            case "\u{0C}": "\\f"
            case let control where control.value < 0x20: QuotedText.jsonUnicodeEscape(control)
            default: nil
            }
        }
    }
}

/// NIP-17 private direct messages in NIP-59 gift wraps: rumor (kind 14, unsigned) → seal (kind 13,
/// NIP-44 to the recipient, signed by the sender) → gift wrap (kind 1059, NIP-44 from a one-time
/// key, tagged with the recipient). Timestamps of seal and wrap are moved up to 2 days back.
public enum NIP17 {
    static func randomPast(_ now: Int) -> Int {
        now - Int(SecureRandom.uniform(2 * 24 * 3600))
    }

    /// `message` from `sender` to `recipient` (a 64-hex-digit public key) as a gift wrap to publish;
    /// throws `invalidEvent` for a bad recipient key.
    public static func giftWrap(message: String, from sender: NostrKeyPair, to recipient: String,
                                now: Int = Int(Date().timeIntervalSince1970)) throws(AppLayerError) -> NostrEvent {
        guard let recipientKey = Hex.decode(recipient), recipientKey.count == 32 else {
            throw AppLayerError(.invalidEvent, kind: .usage, "recipient is not a 32-byte hex public key")
        }
        let rumor = NostrEvent.unsigned(kind: 14, content: message, tags: [["p", recipient]], createdAt: now, pubkey: sender.publicKeyHex)
        let sealKey = try NIP44.conversationKey(secretKey: sender.secretKey, publicKey: recipientKey)
        let seal = try NostrEvent.signed(kind: 13, content: try NIP44.encrypt(rumor.json, conversationKey: sealKey),
                                         createdAt: randomPast(now), by: sender)
        let ephemeral = NostrKeyPair.generate()
        let wrapKey = try NIP44.conversationKey(secretKey: ephemeral.secretKey, publicKey: recipientKey)
        return try NostrEvent.signed(kind: 1059, content: try NIP44.encrypt(seal.json, conversationKey: wrapKey),
                                     tags: [["p", recipient]], createdAt: randomPast(now), by: ephemeral)
    }

    /// Opens a gift wrap addressed to `recipient`: the seal must be validly signed and its author
    /// must be the rumor's author (else anyone could impersonate the sender).
    public static func unwrap(_ wrap: NostrEvent, recipient: NostrKeyPair) throws(AppLayerError) -> (sender: String, rumor: NostrEvent) {
        guard wrap.kind == 1059, wrap.isValid else { throw AppLayerError(.invalidEvent, "not a valid gift wrap") }
        guard let wrapAuthor = Hex.decode(wrap.pubkey) else { throw AppLayerError(.invalidEvent, "bad wrap pubkey") }
        let seal = try NostrEvent(json: try NIP44.decrypt(wrap.content, conversationKey:
            try NIP44.conversationKey(secretKey: recipient.secretKey, publicKey: wrapAuthor)))
        guard seal.kind == 13, seal.isValid, let sealAuthor = Hex.decode(seal.pubkey) else {
            throw AppLayerError(.invalidEvent, "the gift wrap holds no valid seal")
        }
        let rumor = try NostrEvent(json: try NIP44.decrypt(seal.content, conversationKey:
            try NIP44.conversationKey(secretKey: recipient.secretKey, publicKey: sealAuthor)))
        guard rumor.pubkey == seal.pubkey else { throw AppLayerError(.invalidEvent, "rumor author differs from the seal's signer") }
        guard rumor.id == NostrEvent.computeID(pubkey: rumor.pubkey, createdAt: rumor.createdAt, kind: rumor.kind,
                                               tags: rumor.tags, content: rumor.content) else {
            throw AppLayerError(.invalidEvent, "rumor id does not match its content")
        }
        return (seal.pubkey, rumor)
    }
}
