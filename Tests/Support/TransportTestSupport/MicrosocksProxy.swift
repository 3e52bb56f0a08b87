import Foundation
import TransportBase

/// Debian's microsocks on a free loopback port with a username and password: the upstream SOCKS5
/// proxy of the TOR_PT_PROXY tests. Stopped with SIGKILL by PID (it may inherit a blocked SIGTERM
/// from the test runner's thread).
public final class MicrosocksProxy: @unchecked Sendable {
    public static let executable = "/usr/bin/microsocks"
    public let port: UInt16
    private let process = Process()

    public init(user: String, password: String) async throws {
        let probe = try LoopbackListener()
        port = probe.port
        probe.close()
        process.executableURL = URL(fileURLWithPath: Self.executable)
        process.arguments = ["-i", "127.0.0.1", "-p", String(port), "-u", user, "-P", password]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await Task.sleep(for: .milliseconds(200))
    }

    public func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { stop() }
}
