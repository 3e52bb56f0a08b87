extension TransportName {
    /// A name as people type it: a well-known transport ignoring case (`OBFS4` is `obfs4`), else
    /// `text` itself if it is a valid name (``init(validating:)``, whose error it throws).
    public init(matching text: String) throws(BridgeLineError) {
        if let known = Self.known(matching: text) {
            self = known
        } else {
            try self.init(validating: text)
        }
    }
}
