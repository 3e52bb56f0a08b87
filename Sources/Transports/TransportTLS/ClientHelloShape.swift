/// One concrete ClientHello as NSS is asked to send it: what a ``BrowserTLSProfile`` resolves to for
/// one connection. A parrot profile resolves to the same shape every time; a randomized one draws a
/// new shape per connection (``HelloRandomization``).
struct ClientHelloShape: Sendable, Hashable {
    /// IANA codepoints in wire order.
    var cipherSuites: [UInt16]
    /// IANA named groups in preference order (supported_groups).
    var groups: [UInt16]
    /// Key shares beyond the first group's (key_share), in the groups' order.
    var additionalKeyShares: UInt32
    /// IANA signature schemes in wire order (signature_algorithms).
    var signatureSchemes: [UInt16]
    var sessionTickets: Bool
    var ocspStapling: Bool
    var signedCertificateTimestamps: Bool
    var extendedMasterSecret: Bool
    var delegatedCredentials: Bool
    /// record_size_limit's value; nil sends none.
    var recordSizeLimit: UInt16?
    /// TLS 1.3 middlebox compatibility: a legacy session id and ChangeCipherSpec.
    var compatibilityMode: Bool
    /// A GREASE encrypted_client_hello extension (draft-ietf-tls-esni), as browsers send when the
    /// server has no ECH configuration.
    var echGrease: Bool
    /// psk_key_exchange_modes. NSS sends it only while its session cache is on, so false switches
    /// the cache off for the connection; and TLS 1.3 resumption needs it, so without it the
    /// connection neither offers nor keeps a ticket (NSSClientSocket, ResumptionTokenCache).
    var pskKeyExchangeModes: Bool
    /// post_handshake_auth (as OpenSSL and curl send it); the client never has a certificate to give.
    var postHandshakeAuthentication: Bool
    /// ALPN in wire order; empty sends no ALPN extension.
    var applicationProtocols: [String]
}
