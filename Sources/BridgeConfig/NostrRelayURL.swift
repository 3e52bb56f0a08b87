import PosternLinkSpec

/// A Nostr relay address in the normalized form used for storage and de-duplication
/// (the rules also listed in docs/BRIDGE-CONFIG.md):
/// trim; a bare host gets `wss://`; `wss`/`https` become `wss`, `ws`/`http` become `ws`, any other
/// scheme is rejected; the host is lower-cased; ports 443 and 80 and a bare `/` path are dropped;
/// the fragment is removed. `.onion` hosts are ordinary host names here.
///
/// It lives with the settings store, not with the relay client in PosternAppLayer, because the store
/// keeps custom relays in this form and checks them (normalized, unique, not built in, at most
/// ``maximumCustom``) whenever it loads.
public struct NostrRelayURL: Hashable, Sendable, CustomStringConvertible, LosslessStringConvertible {
    public let rawValue: String

    /// The relays every Postern user has; custom relays that normalize to one of these are duplicates.
    public static let builtin: [NostrRelayURL] = [
        "wss://relay.damus.io", "wss://nos.lol", "wss://relay.primal.net", "wss://offchain.pub",
    ].map { NostrRelayURL(trusted: $0) }

    /// How many custom relays a user may add.
    public static let maximumCustom = 8

    private init(trusted: String) { rawValue = trusted }

    public init(normalizing input: String) throws(BridgeConfigError) {
        func malformed() -> BridgeConfigError {
            BridgeConfigError(code: .malformedRelay, kind: .invalidInput, message: "that is not a relay address (try wss://host)")
        }
        var text = Substring(input)
        while let first = text.first, first.isWhitespace { text.removeFirst() }
        while let last = text.last, last.isWhitespace { text.removeLast() }
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw malformed() }

        var scheme = "wss"
        if let separator = text.range(of: "://") {
            switch text[..<separator.lowerBound].lowercased() {
            case "wss", "https": scheme = "wss"
            case "ws", "http": scheme = "ws"
            default: throw malformed()
            }
            text = text[separator.upperBound...]
        }
        if let hash = text.firstIndex(of: "#") { text = text[..<hash] }
        let authorityEnd = text.firstIndex { $0 == "/" || $0 == "?" } ?? text.endIndex
        let authority = text[..<authorityEnd]
        var pathAndQuery = String(text[authorityEnd...])
        guard !authority.isEmpty, !authority.contains("@"), BridgeArgumentSyntax.isHostAndOptionalPort(authority) else { throw malformed() }

        var host = authority
        var port: Substring?
        if authority.hasPrefix("[") {
            let close = authority.firstIndex(of: "]")!
            host = authority[...close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty { port = after.dropFirst() }
        } else if let colon = authority.firstIndex(of: ":") {
            host = authority[..<colon]
            port = authority[authority.index(after: colon)...]
        }
        var normalized = "\(scheme)://\(host.lowercased())"
        if let port, let number = Int(port), number != 443, number != 80 {
            normalized += ":\(number)"
        }
        if pathAndQuery == "/" { pathAndQuery = "" }
        normalized += pathAndQuery
        rawValue = normalized
    }

    public init?(_ description: String) {
        guard let value = try? NostrRelayURL(normalizing: description) else { return nil }
        self = value
    }

    public var description: String { rawValue }
    public var isBuiltin: Bool { Self.builtin.contains(self) }
}
