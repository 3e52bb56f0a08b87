/// A transport name as tor uses it: a C identifier (`[A-Za-z_][A-Za-z0-9_]*`), e.g. `obfs4`.
public struct TransportName: Hashable, Sendable, CustomStringConvertible, LosslessStringConvertible, Comparable {
    public let rawValue: String

    public init(validating text: String) throws(TransportError) {
        guard Self.isValid(text) else {
            throw TransportError(code: .invalidTransportName, kind: .invalidInput,
                                 message: "transport name \"\(text.prefix(64))\" is not a C identifier")
        }
        rawValue = text
    }

    public init?(_ description: String) {
        guard Self.isValid(description) else { return nil }
        rawValue = description
    }

    public var description: String { rawValue }

    public static func < (lhs: TransportName, rhs: TransportName) -> Bool { lhs.rawValue < rhs.rawValue }

    static func isValid(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard let first = bytes.first, bytes.count <= 128 else { return false }
        func isLetter(_ byte: UInt8) -> Bool { (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F }
        return isLetter(first) && bytes.dropFirst().allSatisfy { isLetter($0) || ($0 >= 0x30 && $0 <= 0x39) }
    }
}
