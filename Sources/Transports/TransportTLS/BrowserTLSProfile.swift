/// A recipe for the ClientHello a connection sends: a parrot of one browser's hello, or a
/// randomized one in the manner of uTLS's HelloRandomized family. Each connection resolves the
/// recipe when its handshake starts, so a randomized profile sends a different hello every time.
///
/// The profile also decides whether ALPN is offered: ``BrowserTLSConfiguration/applicationProtocols``
/// lists what the caller can speak, and the profile sends that list (parrots, `randomized-alpn`),
/// leaves ALPN out (`randomized-noalpn`) or draws one of the two (`randomized`). Bridge-line names
/// (`utls-imitate=`, `utls=`) map to profiles through ``named(_:)`` (docs/FINGERPRINTS.md).
public struct BrowserTLSProfile: Sendable, Hashable, CustomStringConvertible {
    /// For people and logs ("firefox-esr", "randomized-alpn").
    public let name: String
    let recipe: Recipe

    enum Recipe: Sendable, Hashable {
        /// The same hello every time; ALPN is the connection's list.
        case parrot(ClientHelloShape)
        /// A fresh draw per connection (HelloRandomization).
        case randomized(HelloRandomization.ALPNChoice)
    }

    public var description: String { name }

    /// True when every connection draws its own hello.
    public var isRandomized: Bool {
        if case .randomized = recipe { return true }
        return false
    }

    /// The concrete hello for one connection that can speak `applicationProtocols`.
    func resolve<G: RandomNumberGenerator>(applicationProtocols: [String], using generator: inout G) -> ClientHelloShape {
        switch recipe {
        case .parrot(var shape):
            shape.applicationProtocols = applicationProtocols
            return shape
        case .randomized(let alpn):
            return HelloRandomization.draw(alpn: alpn, applicationProtocols: applicationProtocols, using: &generator)
        }
    }

    /// Firefox ESR 153's ClientHello as NSS 3.87 can send it (docs/TLS-LIBRARY-CHOICE.md, the
    /// recipe measured against docs/FINGERPRINTS.md), with two differences NSS 3.87 cannot close:
    ///
    /// - no X25519MLKEM768 group or key share (NSS 3.87 has none): JA3 and the hello's length
    ///   differ from Firefox's, JA4 does not;
    /// - no compress_certificate (27): NSS 3.87 cannot decompress, and a client that advertises it
    ///   fails against every server that compresses (measured in TLS-LIBRARY-CHOICE.md). So the
    ///   extension count is one lower and JA4's last part differs.
    ///
    /// Expected JA4 with ALPN h2,http/1.1: `t13d1616h2_86a278354501_0c27189014cf` with SNI and
    /// `t13i1615h2_86a278354501_0c27189014cf` without (Firefox's: `t13d1617h2_…_3cbfd9057e0d`,
    /// `t13i1616h2_…_3cbfd9057e0d`); the cipher part is Firefox's. Firefox offers
    /// ``browserApplicationProtocols``; a caller that cannot speak HTTP/2 offers less, and its JA4
    /// says so (`h1`).
    public static let firefoxESR = BrowserTLSProfile(name: "firefox-esr", recipe: .parrot(ClientHelloShape(
        cipherSuites: [0x1301, 0x1303, 0x1302, 0xc02b, 0xc02f, 0xcca9, 0xcca8, 0xc02c, 0xc030, 0xc00a, 0xc013, 0xc014,
                       0x009c, 0x009d, 0x002f, 0x0035],
        // x25519, secp256r1, secp384r1, secp521r1, ffdhe2048, ffdhe3072
        groups: [0x001d, 0x0017, 0x0018, 0x0019, 0x0100, 0x0101],
        additionalKeyShares: 1,
        signatureSchemes: [0x0403, 0x0503, 0x0603, 0x0804, 0x0805, 0x0806, 0x0401, 0x0501, 0x0601, 0x0203, 0x0201],
        sessionTickets: true,
        ocspStapling: true,
        signedCertificateTimestamps: true,
        extendedMasterSecret: true,
        delegatedCredentials: true,
        recordSizeLimit: 16385,
        compatibilityMode: true,
        echGrease: true,
        pskKeyExchangeModes: true,
        postHandshakeAuthentication: false,
        applicationProtocols: [])))

    /// uTLS's HelloRandomized: a new plausible hello per connection, ALPN offered or not by a draw.
    public static let randomized = BrowserTLSProfile(name: "randomized", recipe: .randomized(.either))
    /// uTLS's HelloRandomizedALPN: a new plausible hello per connection, always offering ALPN (Tor
    /// Browser's built-in snowflake lines ask for it).
    public static let randomizedALPN = BrowserTLSProfile(name: "randomized-alpn", recipe: .randomized(.offered))
    /// uTLS's HelloRandomizedNoALPN: a new plausible hello per connection without ALPN (lyrebird's
    /// webtunnel default).
    public static let randomizedNoALPN = BrowserTLSProfile(name: "randomized-noalpn", recipe: .randomized(.omitted))

    /// The profiles Postern has, by their own names.
    public static let all: [BrowserTLSProfile] = [.firefoxESR, .randomized, .randomizedALPN, .randomizedNoALPN]

    /// What the browser a parrot copies offers by ALPN, for callers that can speak all of it
    /// (Firefox: h2, then http/1.1). Empty for randomized profiles, which copy no browser.
    public var browserApplicationProtocols: [String] {
        self == .firefoxESR ? ["h2", "http/1.1"] : []
    }
}
