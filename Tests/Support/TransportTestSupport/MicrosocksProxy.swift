import Foundation
import PosternSystem
import TransportBase

/// Debian's microsocks on a free loopback port with a username and password: the upstream SOCKS5
/// proxy of the TOR_PT_PROXY tests. Stopped with SIGKILL by PID (it may inherit a blocked SIGTERM
/// from the test runner's thread).
///
/// The port is found by binding a probe listener and closing it, so another test in the same
/// process can be given the same port before microsocks binds it; microsocks then exits, and a
/// dial meant for it reaches the other test's listener (a failed run saw "connection reset", then
/// "connection refused"). So the proxy counts as started only once microsocks's own process holds
/// a listening socket on the port, and a lost race starts it again on another port.
public final class MicrosocksProxy: @unchecked Sendable {
    public static let executable = "/usr/bin/microsocks"
    public let port: UInt16
    private let process: Process

    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    public init(user: String, password: String) async throws {
        var lastProblem = ""
        for _ in 0..<5 {
            let probe = try LoopbackListener()
            let port = probe.port
            probe.close()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.executable)
            process.arguments = ["-i", "127.0.0.1", "-p", String(port), "-u", user, "-P", password]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline && process.isRunning {
                if Self.listens(pid: process.processIdentifier, port: port) {
                    self.port = port
                    self.process = process
                    return
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            lastProblem = process.isRunning ? "no listener on port \(port) after 10 s" : "exited (status \(process.terminationStatus)) on port \(port)"
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        throw StartError(description: "microsocks did not start in 5 tries; last: \(lastProblem)")
    }

    public func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { stop() }

    /// Whether `pid` holds a socket listening on 127.0.0.1:`port`: the kernel's listeners (netlink
    /// sock_diag, as SocksListenerOwnership asks) matched to the process's descriptors.
    private static func listens(pid: Int32, port: UInt16) -> Bool {
        let listeners = (try? SocketDiagnostics.listeners { $0.accepts(address: [127, 0, 0, 1], port: port) }) ?? []
        return listeners.contains { ProcessDescriptors.holdsSocket(pid: pid, inode: $0.inode) }
    }
}
