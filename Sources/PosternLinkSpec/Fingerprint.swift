/// A bridge's RSA identity fingerprint: 40 hexadecimal characters, stored in upper case.
/// A leading `$` (as in tor's node syntax) is tolerated when parsing and dropped.
public struct Fingerprint: Hashable, Sendable, CustomStringConvertible, LosslessStringConvertible, RedactableDescription {
    public let hex: String

    public init(validating text: String) throws(BridgeLineError) {
        let body = text.hasPrefix("$") ? String(text.dropFirst()) : text
        guard body.utf8.count == 40, body.utf8.allSatisfy(isHexDigit) else {
            throw BridgeLineError(code: .badFingerprint, kind: .invalidInput,
                                    message: "a fingerprint is 40 hexadecimal characters")
        }
        hex = body.uppercased()
    }

    public init?(_ description: String) {
        guard let value = try? Fingerprint(validating: description) else { return nil }
        self = value
    }

    public var description: String { hex }

    public func description(policy: LoggingPolicy) -> String { policy.reveal(hex) }
}

/// An ASCII hexadecimal digit, either case (also BridgeConfig's bridge IDs).
package func isHexDigit(_ byte: UInt8) -> Bool {
    (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 70) || (byte >= 97 && byte <= 102)
}
