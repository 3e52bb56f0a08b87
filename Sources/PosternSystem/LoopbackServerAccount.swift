#if canImport(Glibc)
import Glibc
#endif

/// Which account accepted a loopback connection we made: the kernel's socket whose local end is
/// our peer and whose remote end is us (``SocketDiagnostics``) carries the uid of the listener that
/// accepted it. Asked on a connected socket before anything is sent, it closes the gap between
/// proving who listens on a port and connecting to it: if the listener died and another account
/// took the port in between, the connection is that account's, and this says so.
public enum LoopbackServerAccount {
    /// Why the server end of `descriptor`'s connection is not proven to be `uid`'s; nil when it is.
    /// The server's accepted socket can appear a moment after our connect returns (the last ACK is
    /// still being processed), so it is asked for again until `deadline`.
    public static func failure(connected descriptor: Int32, uid: UInt32 = UInt32(geteuid()),
                               deadline: Duration = SocketDiagnostics.deadline) -> String? {
        guard let ours = SocketEnd.local(of: descriptor), let peer = SocketEnd.peer(of: descriptor) else {
            return "the connection's ends cannot be read"
        }
        let end = ContinuousClock.now + deadline
        while true {
            let server: KernelTCPSocket?
            do {
                server = try SocketDiagnostics.socket(local: peer, remote: ours)
            } catch {
                return "the kernel's socket table cannot be asked: \(error)"
            }
            if let server, server.state == KernelTCPSocket.established {
                return server.uid == uid ? nil : "the listener that accepted the connection is uid \(server.uid)'s"
            }
            guard ContinuousClock.now < end else { return "the server's end of the connection was not found" }
            usleep(1000)
        }
    }
}
