import Foundation

/// `openssl s_server` on 127.0.0.1 with a port the kernel chose: a real TLS peer. Stopped with
/// SIGKILL (the test process blocks SIGTERM and its children inherit the mask).
public final class OpenSSLServer: @unchecked Sendable {
    private let process = Process()
    private let lock = NSLock()
    private var output = ""

    public init(certificates: TestCertificates, arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_server", "-accept", "127.0.0.1:0", "-cert", certificates.certificateFile, "-key", certificates.keyFile,
                             "-ign_eof"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        process.standardInput = Pipe()
        out.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.lock()
            self.output += String(decoding: data, as: UTF8.self)
            self.lock.unlock()
        }
        try process.run()
    }

    public var printed: String {
        lock.lock()
        defer { lock.unlock() }
        return output
    }

    /// The port from s_server's "ACCEPT 127.0.0.1:PORT" line.
    public func port() async throws -> UInt16 {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let line = printed.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT ") }),
               let port = line.split(separator: ":").last.flatMap({ UInt16($0) }) {
                return port
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("s_server printed no ACCEPT line: \(printed)")
    }

    public func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
