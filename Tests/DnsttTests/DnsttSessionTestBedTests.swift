import Foundation
import Testing
import TransportBase
import TransportTLS
@testable import DnsttTransport

/// A DnsttSession over UDPLink against the test bed's Go stand-in server (Tests/Support/dnstt-testbed:
/// Debian has no dnstt server), first directly, then through the bed's unbound (a real recursive
/// resolver with the stand-in as its stub zone). The stand-in pipes the stream to the vanilla
/// bridge's ORPort, a real tor: the test sends a Firefox-shaped TLS ClientHello through the tunnel
/// and expects tor's ServerHello back, so bytes went through the Noise handshake, KCP, smux and
/// the resolver both ways. Every wait has a deadline. Runs inside `scripts/testbed exec` with
/// POSTERN_TESTBED_ENV; skipped without a bed.
@Suite(.serialized) struct DnsttSessionTestBedTests {
    static let bed: [String: String]? = {
        guard let path = ProcessInfo.processInfo.environment["POSTERN_TESTBED_ENV"], FileManager.default.fileExists(atPath: path) else { return nil }
        // The env file is written with bash's %q quoting: let bash read it.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", "set -a; source \"$1\"; env -0", "_", path]
        let pipe = Pipe()
        process.standardOutput = pipe
        guard (try? process.run()) != nil else { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        var values: [String: String] = [:]
        for entry in data.split(separator: 0) {
            guard let text = String(bytes: entry, encoding: .utf8), text.hasPrefix("TB_"), let equals = text.firstIndex(of: "=") else { continue }
            values[String(text[..<equals])] = String(text[text.index(after: equals)...])
        }
        return values["TB_DNSTT_PUBKEY"] == nil ? nil : values
    }()

    static let domain = DnsName(parsing: "t.postern.test")!

    static func publicKey() throws -> [UInt8] {
        let hex = Array(try #require(bed?["TB_DNSTT_PUBKEY"]).utf8)
        try #require(hex.count == 64)
        return stride(from: 0, to: 64, by: 2).map { UInt8(String(decoding: hex[$0..<($0 + 2)], as: UTF8.self), radix: 16)! }
    }

    /// Opens a session to `resolver`, sends a ClientHello, expects a ServerHello; returns the timings.
    static func exchange(resolver: String) async throws -> (open: Duration, firstByte: Duration) {
        let link = try UDPLink.connect(to: try TransportEndpoint(parsing: resolver))
        let session = try DnsttSession(link: link, serverPublicKey: try publicKey(), domain: domain,
                                       mtu: try DnsttWire.mtu(domain: domain), handshakeTimeout: .seconds(30))
        let started = ContinuousClock.now
        defer { Task { await session.close() } }
        try await session.open()
        let opened = ContinuousClock.now - started
        let hello = try BrowserTLSStream.clientHello(for: BrowserTLSConfiguration(serverName: "www.example.com"))
        try await session.write(hello)
        let sent = ContinuousClock.now
        // Tor's answer: at least the ServerHello record's header and its handshake type.
        let reply = try await withThrowingTaskGroup(of: [UInt8]?.self) { group in
            group.addTask {
                var bytes: [UInt8] = []
                for try await chunk in session.incoming {
                    bytes += chunk
                    await session.acknowledgeRead(chunk.count)
                    if bytes.count >= 6 { return bytes }
                }
                return bytes
            }
            group.addTask {
                try await Task.sleep(for: .seconds(30))
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        let bytes = try #require(reply, "no answer from the ORPort through the tunnel within 30 s")
        #expect(bytes.count >= 6)
        #expect(bytes.prefix(2) == [0x16, 0x03], "a TLS handshake record")
        #expect(bytes.count < 6 || bytes[5] == 0x02, "a ServerHello")
        return (opened, ContinuousClock.now - sent)
    }

    @Test(.enabled(if: bed != nil, "needs the test bed (POSTERN_TESTBED_ENV)"))
    func streamThroughTheStandInDirectly() async throws {
        let times = try await Self.exchange(resolver: try #require(Self.bed?["TB_DNSTT_SERVER_UDP"]))
        print("dnstt direct: open \(times.open), first byte \(times.firstByte)")
    }

    @Test(.enabled(if: bed != nil, "needs the test bed (POSTERN_TESTBED_ENV)"))
    func streamThroughUnbound() async throws {
        let line = try #require(Self.bed?["TB_BRIDGE_DNSTT_UDP"])
        let udp = try #require(line.split(separator: " ").first { $0.hasPrefix("udp=") })
        let times = try await Self.exchange(resolver: String(udp.dropFirst(4)))
        print("dnstt through unbound: open \(times.open), first byte \(times.firstByte)")
    }
}
