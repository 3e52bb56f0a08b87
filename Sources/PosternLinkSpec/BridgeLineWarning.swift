/// A remark about a bridge line that still parsed (an unknown transport, a default port, an argument
/// the transport does not use): something the user should probably look at. Scrubbed like
/// ``BridgeLineError``.
public struct BridgeLineWarning: Hashable, Sendable, CustomStringConvertible {
    public let code: BridgeLineError.Code
    public let message: String

    public init(code: BridgeLineError.Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
