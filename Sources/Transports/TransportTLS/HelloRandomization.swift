/// The randomized profiles' draw, in the manner of uTLS's HelloRandomized (its randomized-spec
/// generator): per connection a cipher subset and order, groups, key shares, signature
/// schemes, optional extensions and ALPN, each from what real clients send, so that no two
/// connections need share a JA3 and the JA4 moves too (docs/FINGERPRINTS.md, "Randomized profiles").
///
/// Plausible, never arbitrary: the three TLS 1.3 suites are always offered and come first; the
/// ECDHE AEAD suites every modern server takes are always there; x25519 and secp256r1 are always
/// the first groups (so the key shares are ones every server accepts); the signature schemes always
/// include ecdsa_secp256r1_sha256 and rsa_pss_rsae_sha256. Orders are taken from real clients
/// (Chrome, Firefox, Go's crypto/tls, mobile stacks that put ChaCha20 first), not shuffled freely.
/// The cipher list never contains OpenSSL's defaults that no browser sends (DHE, CCM, the SHA-256/384
/// CBC suites), so the hello is never OpenSSL's default one.
///
/// What NSS 3.87 cannot vary: the extension order (fixed inside NSS, where uTLS shuffles it), GREASE
/// and padding (NSS pads by itself when the hello is 256 to 511 bytes long, as BoringSSL does).
enum HelloRandomization {
    /// Whether a randomized hello offers the caller's ALPN list.
    enum ALPNChoice: Sendable, Hashable {
        case offered
        case omitted
        /// Offered with probability ``alpnProbability`` (uTLS's HelloRandomized).
        case either
    }

    static let alpnProbability = 0.7

    static func draw<G: RandomNumberGenerator>(alpn: ALPNChoice, applicationProtocols: [String],
                                               using generator: inout G) -> ClientHelloShape {
        func chance(_ probability: Double) -> Bool { Double.random(in: 0..<1, using: &generator) < probability }

        // TLS 1.3: all three, AES-128-GCM first (every browser), the other two in Chrome's or Firefox's order.
        var suites: [UInt16] = chance(0.5) ? [0x1301, 0x1302, 0x1303] : [0x1301, 0x1303, 0x1302]

        // TLS 1.2 ECDHE AEAD: AES-128-GCM (ECDSA, RSA) always; AES-256-GCM and ChaCha20 pairs usually.
        let aes128: [UInt16] = [0xc02b, 0xc02f], aes256: [UInt16] = [0xc02c, 0xc030], chacha: [UInt16] = [0xcca9, 0xcca8]
        let keepsAES256 = chance(0.85), keepsChaCha = chance(0.9)
        let aead: [[UInt16]]
        switch Int.random(in: 0..<3, using: &generator) {
        case 0: aead = [aes128, keepsAES256 ? aes256 : [], keepsChaCha ? chacha : []]  // Chrome, Go
        case 1: aead = [aes128, keepsChaCha ? chacha : [], keepsAES256 ? aes256 : []]  // Firefox
        default: aead = [keepsChaCha ? chacha : [], aes128, keepsAES256 ? aes256 : []]  // ChaCha20 first (mobile)
        }
        suites += aead.joined()

        // TLS 1.2 ECDHE CBC: one real client's set, or none.
        switch Int.random(in: 0..<4, using: &generator) {
        case 0: suites += [0xc013, 0xc014]  // Chrome
        case 1: suites += [0xc00a, 0xc013, 0xc014]  // Firefox
        case 2: suites += [0xc009, 0xc013, 0xc00a, 0xc014]  // Go
        default: break
        }
        // RSA key exchange, GCM then CBC, each pair usually; 3DES rarely, last (older Go and Safari).
        if chance(0.8) { suites += [0x009c, 0x009d] }
        if chance(0.8) { suites += [0x002f, 0x0035] }
        if chance(0.1) { suites += [0xc012, 0x000a] }

        // x25519 and secp256r1 always, in that order (the key shares below come from them).
        var groups: [UInt16] = [0x001d, 0x0017]
        if chance(0.9) { groups.append(0x0018) }
        if chance(0.4) { groups.append(0x0019) }
        if chance(0.2) { groups += [0x0100, 0x0101] }  // Firefox's ffdhe2048, ffdhe3072

        var schemes: [UInt16]
        let sha1: [UInt16]
        switch Int.random(in: 0..<3, using: &generator) {
        case 0:  // Chrome: by hash, ECDSA then PSS then PKCS#1
            schemes = [0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601]
            sha1 = [0x0201]
        case 1:  // Firefox: by algorithm
            schemes = [0x0403, 0x0503, 0x0603, 0x0804, 0x0805, 0x0806, 0x0401, 0x0501, 0x0601]
            sha1 = [0x0203, 0x0201]
        default:  // Go's crypto/tls, less Ed25519 (NSS 3.87 has none for TLS)
            schemes = [0x0804, 0x0403, 0x0805, 0x0806, 0x0401, 0x0501, 0x0601, 0x0503, 0x0603]
            sha1 = [0x0201, 0x0203]
        }
        if chance(0.4) { schemes += sha1 }

        let offersALPN: Bool
        switch alpn {
        case .offered: offersALPN = true
        case .omitted: offersALPN = false
        case .either: offersALPN = chance(alpnProbability)
        }

        return ClientHelloShape(
            cipherSuites: suites,
            groups: groups,
            additionalKeyShares: chance(0.4) ? 1 : 0,
            signatureSchemes: schemes,
            sessionTickets: chance(0.8),
            ocspStapling: chance(0.8),
            signedCertificateTimestamps: chance(0.5),
            extendedMasterSecret: chance(0.9),
            delegatedCredentials: chance(0.15),
            recordSizeLimit: chance(0.25) ? 16385 : nil,
            compatibilityMode: true,
            echGrease: chance(0.5),
            pskKeyExchangeModes: chance(0.85),
            postHandshakeAuthentication: chance(0.1),
            applicationProtocols: offersALPN ? applicationProtocols : [])
    }
}
