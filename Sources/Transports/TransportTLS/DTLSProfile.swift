/// What a WebRTC DTLS endpoint offers and prefers: the settings that shape its flight. Values are
/// IANA numbers (cipher suites, named groups, signature schemes; SRTP protection profiles from
/// RFC 5764 and RFC 7714).
public struct DTLSProfile: Hashable, Sendable {
    /// A name for logs and tests ("firefox-webrtc", "randomized").
    public var name: String
    /// Enabled suites, in preference order (a server picks the first the client offers).
    public var cipherSuites: [UInt16]
    /// Enabled groups, in preference order.
    public var groups: [UInt16]
    /// The signature schemes a server's CertificateRequest lists (and a client's hello offers),
    /// in order. Every entry must be one NSS implements.
    public var signatureSchemes: [UInt16]
    /// use_srtp profiles in preference order (at most 8).
    public var srtpProfiles: [UInt16]
    /// Highest version: DTLS 1.3 when true (NSS 3.87 implements it, RFC 9147's wire version
    /// 0xfefc), else DTLS 1.2. The lowest is always DTLS 1.2.
    public var allowsDTLS13: Bool
    /// ALPN protocols a server accepts when a client offers ALPN (pion does not).
    public var applicationProtocols: [String]

    public init(name: String, cipherSuites: [UInt16], groups: [UInt16], signatureSchemes: [UInt16], srtpProfiles: [UInt16],
                allowsDTLS13: Bool, applicationProtocols: [String]) {
        self.name = name
        self.cipherSuites = cipherSuites
        self.groups = groups
        self.signatureSchemes = signatureSchemes
        self.srtpProfiles = srtpProfiles
        self.allowsDTLS13 = allowsDTLS13
        self.applicationProtocols = applicationProtocols
    }

    /// NSS's own signature scheme list, which Firefox's WebRTC leaves as it is: its
    /// CertificateRequest carries these 15 (docs/FINGERPRINTS.md, firefox-snowflake).
    static let nssDefaultSignatureSchemes: [UInt16] = [
        0x0403, 0x0503, 0x0603, 0x0203,  // ecdsa P-256/SHA-256, P-384/SHA-384, P-521/SHA-512, SHA-1
        0x0804, 0x0805, 0x0806,  // rsa_pss_rsae_sha256/384/512
        0x0401, 0x0501, 0x0601, 0x0201,  // rsa_pkcs1_sha256/384/512, sha1
        0x0402, 0x0502, 0x0602, 0x0202,  // dsa_sha256/384/512, sha1
    ]

    /// Firefox ESR's WebRTC DTLS (its transport layer on NSS): the suites Firefox enables for TLS
    /// less the SHA-384 and static-RSA ones WebRTC turns off, plus ECDHE_ECDSA_AES_128_CBC_SHA,
    /// in NSS's order (the order of Firefox's measured DTLS ClientHello: 1301 1303 c02b c02f cca9
    /// cca8 c00a c009 c013 c014); x25519, P-256, P-384, ffdhe2048, ffdhe3072 (no X25519MLKEM768:
    /// NSS 3.87 lacks it); NSS's default signature schemes; SRTP AEAD_AES_128_GCM,
    /// AEAD_AES_256_GCM, AES128_CM_SHA1_80, AES128_CM_SHA1_32; DTLS 1.2 to 1.3; ALPN webrtc,
    /// c-webrtc.
    public static let firefoxWebRTC = DTLSProfile(
        name: "firefox-webrtc",
        cipherSuites: [0x1301, 0x1303, 0xc02b, 0xc02f, 0xcca9, 0xcca8, 0xc00a, 0xc009, 0xc013, 0xc014],
        groups: [0x001d, 0x0017, 0x0018, 0x0100, 0x0101],
        signatureSchemes: nssDefaultSignatureSchemes,
        srtpProfiles: [0x0007, 0x0008, 0x0001, 0x0002],
        allowsDTLS13: true,
        applicationProtocols: ["webrtc", "c-webrtc"])

    /// A different plausible server flight per call, for a censor that blocks one exact flight:
    /// the CertificateRequest's signature schemes are a random ordered subset of NSS's 15 (at
    /// least 6, always with ecdsa_secp256r1_sha256, which every WebRTC peer's P-256 certificate
    /// needs), the ECDSA suite preferred among those pion offers is drawn (AES-128-GCM,
    /// AES-256-GCM or AES-256-CBC-SHA, each with a matching RSA entry after it), and the SRTP
    /// preference is shuffled among the two AEAD profiles and AES128_CM_SHA1_80. What NSS decides
    /// alone stays as it is: the ServerHello's extension order, point formats, certificate types.
    public static func randomized<Generator: RandomNumberGenerator>(using generator: inout Generator) -> DTLSProfile {
        var schemes = nssDefaultSignatureSchemes.filter { $0 != 0x0403 }.shuffled(using: &generator)
        schemes = Array(schemes.prefix(Int.random(in: 5...schemes.count, using: &generator)))
        schemes.insert(0x0403, at: Int.random(in: 0...min(2, schemes.count), using: &generator))
        let ecdsaFirst: [[UInt16]] = [[0xc02b, 0xc02f], [0xc02c, 0xc030], [0xc00a, 0xc014]]
        var suites = ecdsaFirst.shuffled(using: &generator).flatMap { $0 }
        suites.insert(contentsOf: [0x1301, 0x1303], at: 0)
        var srtp: [UInt16] = [0x0007, 0x0008, 0x0001].shuffled(using: &generator)
        srtp.append(0x0002)
        return DTLSProfile(name: "randomized", cipherSuites: suites, groups: [0x001d, 0x0017, 0x0018],
                           signatureSchemes: schemes, srtpProfiles: srtp, allowsDTLS13: true,
                           applicationProtocols: ["webrtc", "c-webrtc"])
    }

    public static func randomized() -> DTLSProfile {
        var generator = SystemRandomNumberGenerator()
        return randomized(using: &generator)
    }
}
