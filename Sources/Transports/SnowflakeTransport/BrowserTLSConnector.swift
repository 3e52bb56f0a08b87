import TransportBase
import TransportTLS
import TransportWire

/// TCP, then TLS when the URL is https: how the broker rendezvous, its domain fronts and the AMP
/// cache are reached outside the test bed's plain-HTTP broker. The TLS is TransportTLS's
/// BrowserTLSStream with Firefox ESR's ClientHello (`BrowserTLSProfile.firefoxESR`), never a TLS
/// library's default hello. The certificate is checked against the system trust (plus an extra
/// CA file when given) and against the name dialled: with domain fronting that is the front, as
/// in the reference client, and the HTTP Host inside names the real broker or cache.
public struct BrowserTLSConnector: SnowflakeStreamConnector {
    /// The one place the broker's ALPN is chosen (the broker, its fronts and the AMP cache all get
    /// it): Firefox's own list. When the server picks h2 the rendezvous speaks HTTP/2
    /// (BrokerRendezvous, TransportWire's HTTP2Connection), so the offer is honest.
    public static let brokerApplicationProtocols = ["h2", "http/1.1"]

    /// The whole TLS handshake ends by this, however a server drips its bytes: on expiry the TCP
    /// connection is closed, which ends the read in progress.
    public static let handshakeDeadline: Duration = .seconds(20)

    public var caFile: String?
    public var timeoutSeconds: Int
    /// False leaves SNI out of the ClientHello (the bridge line's utls-nosni); the name is still
    /// verified.
    public var sendsServerName: Bool
    public var applicationProtocols: [String]
    public var profile: BrowserTLSProfile

    public init(caFile: String? = nil, timeoutSeconds: Int = 15, sendsServerName: Bool = true,
                applicationProtocols: [String] = BrowserTLSConnector.brokerApplicationProtocols, profile: BrowserTLSProfile = .firefoxESR) {
        self.caFile = caFile
        self.timeoutSeconds = timeoutSeconds
        self.sendsServerName = sendsServerName
        self.applicationProtocols = applicationProtocols
        self.profile = profile
    }

    public func connect(host: String, port: UInt16, tlsServerName: String?) async throws(SnowflakeError) -> any ByteStream {
        let tcp = try await TCPByteStream.connect(host: host, port: port, timeoutSeconds: timeoutSeconds)
        guard let tlsServerName else { return tcp }
        do {
            return try await BrowserTLSStream.handshake(over: tcp, configuration: BrowserTLSConfiguration(
                serverName: tlsServerName, applicationProtocols: applicationProtocols, profile: profile, caFile: caFile,
                sendsServerName: sendsServerName, handshakeTimeout: Self.handshakeDeadline))
        } catch {
            tcp.close()
            throw SnowflakeError(streamFailure: error)
        }
    }
}
