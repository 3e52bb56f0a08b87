import TransportBase

/// The SOCKS negotiation as this target drives it: TransportBase's `SocksSession.negotiate`, the code
/// the listener runs, which the module offers this package as `package` API (users of the library do
/// not see it).
enum PTSocksFuzzEntry {
    /// Runs the server side of the negotiation over `client` (no listener, no dial).
    static func negotiate(client: any TransportConnection, transport: any PluggableTransport) async throws -> (target: TransportEndpoint, early: [UInt8]) {
        let (_, target, early) = try await SocksSession.negotiate(client: client, transport: transport, admission: .open())
        return (target, early)
    }
}
