import PosternSystem

/// A Nostr public key as people pass it around: 64 hex digits (a BIP-340 x-only key), kept in
/// lower case as events carry it.
public struct NostrPublicKey: Hashable, Sendable, CustomStringConvertible {
    /// The key as 64 lower-case hex digits.
    public let hex: String

    /// Exactly 64 ASCII hex digits, either case; anything else is a `usage` error.
    public init(validating text: String) throws(AppLayerError) {
        guard text.utf8.count == 64, text.utf8.allSatisfy({ Self.isHexDigit($0) }) else {
            throw AppLayerError(.invalidPublicKey, kind: .usage, "a public key is 64 hex digits")
        }
        hex = text.lowercased()
    }

    public var description: String { hex }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }
}

extension AppLayerError.Code {
    /// A public key that is not 64 hex digits.
    public static let invalidPublicKey = Self("invalid-public-key")
}

extension NIP17 {
    /// ``giftWrap(message:from:to:now:)`` to a validated key.
    public static func giftWrap(message: String, from sender: NostrKeyPair, to recipient: NostrPublicKey) throws(AppLayerError) -> NostrEvent {
        try giftWrap(message: message, from: sender, to: recipient.hex)
    }

    /// A message read from a file or standard input, without the newline (`\n` or `\r\n`) that
    /// ends its last line: what the sender typed, not how the file ends. (`\r\n` is one Character
    /// in Swift, so either is one `dropLast()`.)
    public static func messageText(fromInput text: String) -> String {
        text.hasSuffix("\r\n") || text.hasSuffix("\n") ? String(text.dropLast()) : text
    }
}
