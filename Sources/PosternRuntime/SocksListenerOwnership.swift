import Foundation
import PosternTor
import PosternSystem

/// The kernel's proof that a SOCKS endpoint named in a status file is the listener of the process
/// that wrote it, and that this process is ours: every listening socket that would take a
/// connection to the endpoint (netlink sock_diag's listeners) is held open by that process (its
/// inode among /proc/PID/fd), was created by our effective uid, and the process runs as our
/// effective uid. Each connection made to it afterwards is checked too (``OwnSocksConnector`` in the app layer).
///
/// A live pid and a loopback address are not enough: after a `postern run` is killed its pid can be
/// reused, and another local account can listen on the freed port; app traffic sent there would
/// leave Tor. The status file is 0600 in our state directory, but only the kernel knows who holds
/// the port now.
enum SocksListenerOwnership {
    /// Why the endpoint is not proven to be `pid`'s listener; nil when it is. `listeners` are the
    /// kernel's listening sockets that take a connection to an address and port (the test seam).
    static func failure(pid: Int32, socks: SocksEndpoint,
                        listeners: ([UInt8], UInt16) throws(SocketDiagnostics.Unavailable) -> [KernelTCPSocket] = kernelListeners) -> String? {
        let ourUID = UInt32(geteuid())
        guard let processUID = ProcessDescriptors.effectiveUID(pid: pid) else {
            return "process \(pid) cannot be inspected"
        }
        guard processUID == ourUID else { return "process \(pid) belongs to uid \(processUID), not to us" }
        guard let address = KernelTCPSocket.addressBytes(socks.host) else { return "\(socks.host) is not an address" }
        let found: [KernelTCPSocket]
        do {
            found = try listeners(address, socks.port)
        } catch {
            return "the kernel's socket table cannot be asked: \(error)"
        }
        guard !found.isEmpty else { return "nothing listens there" }
        for listener in found {
            guard listener.uid == ourUID else { return "uid \(listener.uid) listens there" }
            guard ProcessDescriptors.holdsSocket(pid: pid, inode: listener.inode) else {
                return "the listener there is not process \(pid)'s"
            }
        }
        return nil
    }

    /// Every listener, IPv4 or IPv6, wildcard or not, that takes a connection to `address`:`port`.
    static func kernelListeners(address: [UInt8], port: UInt16) throws(SocketDiagnostics.Unavailable) -> [KernelTCPSocket] {
        try SocketDiagnostics.listeners { $0.accepts(address: address, port: port) }
    }
}
