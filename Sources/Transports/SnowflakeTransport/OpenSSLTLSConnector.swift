import TransportWire

/// TCP, then TLS (TransportWire's TLSClientStream) when the URL is https: what the broker
/// rendezvous needs outside the test bed's plain-HTTP broker. The certificate is checked against
/// system roots (plus an extra CA file when given) and against the name dialled: with domain
/// fronting that is the front, as in the reference client. ALPN offers http/1.1.
public struct OpenSSLTLSConnector: SnowflakeStreamConnector {
    public var caFile: String?
    public var timeoutSeconds: Int
    /// False leaves SNI out of the ClientHello (the bridge line's utls-nosni).
    public var sendsServerName: Bool

    /// The whole handshake ends by this (checked after every read): a server that drips its
    /// certificate cannot hold the dial longer than this plus one read timeout.
    public static let handshakeDeadline: Duration = .seconds(20)

    public init(caFile: String? = nil, timeoutSeconds: Int = 15, sendsServerName: Bool = true) {
        self.caFile = caFile
        self.timeoutSeconds = timeoutSeconds
        self.sendsServerName = sendsServerName
    }

    public func connect(host: String, port: UInt16, tlsServerName: String?) async throws(SnowflakeError) -> any ByteStream {
        let tcp = try await TCPByteStream.connect(host: host, port: port, timeoutSeconds: timeoutSeconds)
        guard let tlsServerName else { return tcp }
        do {
            return try await TLSClientStream.handshake(over: tcp, options: TLSClientOptions(
                serverName: tlsServerName, sendsServerName: sendsServerName, caFile: caFile, offersHTTP11: true,
                handshakeDeadline: Self.handshakeDeadline))
        } catch {
            tcp.close()
            throw SnowflakeError(streamFailure: error)
        }
    }
}
