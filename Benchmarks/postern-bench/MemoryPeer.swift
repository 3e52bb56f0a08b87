/// The stock side of a memory route: Debian's tor with the same base torrc plus `torrcLines`, and
/// the transport client beside it, whose resident memory is added to tor's.
struct MemoryPeer {
    /// The client's name in the output ("obfs4proxy", "snowflake-client", "dnstt client double").
    let label: String
    /// Bridge and, for a managed transport, ClientTransportPlugin lines. For a `standalone`
    /// client, "%PORT%" stands for the loopback port it is told to listen on.
    let torrcLines: String
    /// Started by the benchmark before tor (its argv; "%PORT%" as above), for a client that is
    /// not a managed transport: it forwards a local TCP port through the tunnel, and tor's bridge
    /// is that port. nil: the client is tor's managed child (ClientTransportPlugin exec).
    let standalone: [String]?
    /// A line of the standalone client's output that says it is listening.
    let readyMarker: String
}
