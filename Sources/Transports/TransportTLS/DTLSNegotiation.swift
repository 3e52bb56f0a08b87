/// What a completed DTLS handshake chose.
public struct DTLSNegotiation: Hashable, Sendable {
    /// 0xfefd for DTLS 1.2, 0xfefc for DTLS 1.3 (the wire numbers).
    public var version: UInt16
    /// The IANA number of the cipher suite.
    public var cipherSuite: UInt16
    /// The use_srtp profile (RFC 5764); 0 when none was negotiated.
    public var srtpProfile: UInt16

    public init(version: UInt16, cipherSuite: UInt16, srtpProfile: UInt16) {
        self.version = version
        self.cipherSuite = cipherSuite
        self.srtpProfile = srtpProfile
    }

    public var isDTLS13: Bool { version == 0xfefc }
}
