#if canImport(Glibc)
import Glibc
import PosternLinkSpec
#endif
import Foundation
import PosternSystem
import Synchronization

/// Where the managed-proxy protocol lines go. Each call writes one whole line, unbuffered.
public struct ManagedProxyOutput: Sendable {
    private let writeLine: @Sendable (String) -> Void
    public init(_ writeLine: @escaping @Sendable (String) -> Void) { self.writeLine = writeLine }
    public func line(_ text: String) { writeLine(text) }

    /// Writes straight to file descriptor 1 with write(2): no stdio buffering, so tor sees every line
    /// at once even when stdout is a pipe (pt-spec §4.3).
    public static let standardOutput: ManagedProxyOutput = {
        let lock = Mutex(())
        return ManagedProxyOutput { text in
            let bytes = Array((text + "\n").utf8)
            lock.withLock { _ in try? SystemCall.writeAll(1, bytes) }
        }
    }()
}

/// pt-spec 1.0, client side, as a managed proxy: tor starts us with
/// `ClientTransportPlugin obfs4 exec postern pt-client`, configures us through the environment and
/// reads our answers on stdout. An upstream proxy in `TOR_PT_PROXY` (socks5 only) is used for every
/// outgoing connection and acknowledged with `PROXY DONE`; anything else gets `PROXY-ERROR`.
public enum ManagedClientProxy {
    public static let implementationName = "postern"
    public static let implementationVersion = "0.1"

    /// Runs until stdin closes (when `TOR_PT_EXIT_ON_STDIN_CLOSE=1`) or the task is cancelled.
    /// Returns the process exit status: 0 after a clean shutdown, 1 when configuration failed.
    public static func run(registry: TransportRegistry, environment: [String: String],
                           output: ManagedProxyOutput = .standardOutput,
                           standardInput: Int32 = 0) async -> Int32 {
        func value(_ name: String) -> String? {
            guard let text = environment[name], !text.isEmpty else { return nil }
            return text
        }
        // Everything is validated before VERSION: tor accepts ENV-ERROR only before it.
        guard let versions = value("TOR_PT_MANAGED_TRANSPORT_VER") else {
            output.line("ENV-ERROR no TOR_PT_MANAGED_TRANSPORT_VER environment variable")
            return 1
        }
        guard versions.split(separator: ",", omittingEmptySubsequences: false).contains("1") else {
            output.line("VERSION-ERROR no-version")
            return 1
        }
        guard let requested = value("TOR_PT_CLIENT_TRANSPORTS") else {
            output.line("ENV-ERROR no TOR_PT_CLIENT_TRANSPORTS environment variable")
            return 1
        }
        if let stateLocation = value("TOR_PT_STATE_LOCATION") {
            do {
                try FileManager.default.createDirectory(atPath: stateLocation, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                output.line("ENV-ERROR cannot create TOR_PT_STATE_LOCATION")
                return 1
            }
        }
        output.line("VERSION 1")
        var dialer = OutboundDialer.direct
        if let proxyURI = value("TOR_PT_PROXY") {
            do {
                dialer = .through(try UpstreamProxy(parsing: proxyURI))
                output.line("PROXY DONE")
            } catch {
                output.line("PROXY-ERROR \(sanitized(error.message))")
                return 1
            }
        }
        output.line("STATUS TYPE=version IMPLEMENTATION=\(quoted(implementationName)) VERSION=\(quoted(implementationVersion))")

        let events = TransportEventSink { event in
            output.line("LOG SEVERITY=\(event.severity.rawValue) MESSAGE=\(quoted(event.description))")
        }
        var servers: [PTSocksServer] = []
        var started = Set<TransportName>()
        for word in requested.split(separator: ",") {
            // Unknown names are ignored without CMETHOD-ERROR, as pt-spec says.
            guard let name = TransportName(String(word)), let transport = registry.transport(named: name),
                  started.insert(name).inserted else { continue }
            do {
                let server = try PTSocksServer(transport: transport, events: events, dialer: dialer)
                servers.append(server)
                output.line("CMETHOD \(name) socks5 127.0.0.1:\(server.port)")
            } catch {
                output.line("CMETHOD-ERROR \(name) \(sanitized(error.message))")
            }
        }
        output.line("CMETHODS DONE")

        if environment["TOR_PT_EXIT_ON_STDIN_CLOSE"] == "1" {
            await waitForEndOfFile(standardInput)
        } else {
            // Keep serving until the process is terminated or the caller cancels us.
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
        }
        for server in servers { server.stop() }
        for server in servers { await server.waitUntilStopped() }
        return 0
    }

    /// Blocks a dedicated thread in read(2) until end of file; the async caller just suspends.
    static func waitForEndOfFile(_ descriptor: Int32) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                var scratch = [UInt8](repeating: 0, count: 512)
                while let count = try? SystemCall.retrying("read", {
                    scratch.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
                }), count > 0 {}
                continuation.resume()
            }
            thread.name = "postern-pt-stdin"
            thread.start()
        }
    }

    /// A double-quoted C-style string (pt-spec §4.2), 7-bit ASCII only.
    static func quoted(_ text: String) -> String {
        QuotedText.quoted(text) { scalar in scalar.isASCII && scalar.value >= 0x20 && scalar.value != 0x7F ? nil : "?" }
    }

    /// Free text for CMETHOD-ERROR: one line, 7-bit ASCII.
    static func sanitized(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value != 0x7F ? $0 : "?" }))
    }
}
