/// What a ClientHello looks like: cipher suites and their order, groups and key shares, signature
/// schemes and the extensions NSS is asked to send. ALPN and the server name come from the
/// connection (``BrowserTLSConfiguration``), not from here.
public struct BrowserTLSProfile: Sendable, Hashable {
    /// For people and logs ("firefox-esr").
    public let name: String
    /// IANA codepoints in wire order.
    let cipherSuites: [UInt16]
    /// IANA named groups in preference order (supported_groups).
    let groups: [UInt16]
    /// Key shares beyond the first group's (key_share), in the groups' order.
    let additionalKeyShares: UInt32
    /// IANA signature schemes in wire order (signature_algorithms).
    let signatureSchemes: [UInt16]
    let sessionTickets: Bool
    let ocspStapling: Bool
    let signedCertificateTimestamps: Bool
    let extendedMasterSecret: Bool
    let delegatedCredentials: Bool
    /// record_size_limit's value; nil sends none.
    let recordSizeLimit: UInt16?
    /// TLS 1.3 middlebox compatibility: a legacy session id and ChangeCipherSpec.
    let compatibilityMode: Bool
    /// A GREASE encrypted_client_hello extension (draft-ietf-tls-esni), as browsers send when the
    /// server has no ECH configuration.
    let echGrease: Bool

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
    /// `t13i1616h2_…_3cbfd9057e0d`); the cipher part is Firefox's.
    public static let firefoxESR = BrowserTLSProfile(
        name: "firefox-esr",
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
        echGrease: true)
}
