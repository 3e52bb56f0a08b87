import PosternSystem
import TransportBase

/// TransportTLS's failures, in TransportError's shape. Messages name the failing step and NSS's or
/// OpenSSL's reason, never the server's name or certificate contents.
extension TransportError.Code {
    /// NSS could not start, or a connection could not be configured with the profile.
    public static let tlsSetupFailed = Self(rawValue: "tls-setup-failed")
    /// The handshake failed: an alert, a malformed or unexpected message, no common parameters.
    public static let tlsHandshakeFailed = Self(rawValue: "tls-handshake-failed")
    /// The server's certificate chain does not verify, or does not name the server.
    public static let tlsCertificateRejected = Self(rawValue: "tls-certificate-rejected")
    /// The handshake did not finish before its deadline.
    public static let tlsHandshakeTimedOut = Self(rawValue: "tls-handshake-timed-out")
    /// The server sent more handshake bytes than ``BrowserTLSStream/handshakeByteLimit``.
    public static let tlsHandshakeTooLarge = Self(rawValue: "tls-handshake-too-large")
    /// After the handshake, a record could not be read (bad MAC, bad alert, oversized record).
    public static let tlsRecordRejected = Self(rawValue: "tls-record-rejected")
    /// A ClientHello name (`utls-imitate=`, `utls=`, `--profile`) that maps to no profile.
    public static let unknownTLSProfile = Self(rawValue: "unknown-tls-profile")
}
