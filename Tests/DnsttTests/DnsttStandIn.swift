import Foundation
import PosternTestSupport
import Testing
import TurboTunnel
@testable import DnsttTransport

/// Our Go dnstt server stand-in (Tests/Support/dnstt-testbed/server: Debian has no dnstt server) on
/// 127.0.0.1 with its DoT and DoH listeners, so the links are tested against a real TLS and HTTP
/// stack (Go's crypto/tls and net/http, h2 and HTTP/1.1) without the test bed. Built offline by
/// build.sh into .build/dnstt-testbed (shared with the bed) when missing or stale. Its ORPort is
/// a closed local port: these tests send polls only, which need no session behind them.
final class DnsttStandIn: @unchecked Sendable {
    static let domain = DnsName(parsing: "t.postern.test")!
    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    let certificates: TestCertificates
    let dotPort: UInt16
    let dohPort: UInt16
    let http1Only: Bool
    private let directory: URL
    private let binary: URL
    private var process: Process?

    var dohURL: String { "https://127.0.0.1:\(dohPort)/dns-query" }

    /// Builds (if needed) and starts the stand-in; nil with a recorded reason when Go is missing
    /// on this machine (then the test cannot run; CI installs it through scripts/install-deps.sh).
    static func start(http1Only: Bool = false) async throws -> DnsttStandIn {
        let output = repositoryRoot.appendingPathComponent(".build/dnstt-testbed")
        let build = try await ProcessRunner.run(repositoryRoot.appendingPathComponent("Tests/Support/dnstt-testbed/build.sh"),
                                                [output.path, "server"])
        guard build.status == 0 else { throw TestFailure("building the dnstt stand-in failed: \(build.stderr)") }
        let standIn = try await DnsttStandIn(binary: output.appendingPathComponent("dnstt-test-server"), http1Only: http1Only)
        try await standIn.launch()
        return standIn
    }

    private init(binary: URL, http1Only: Bool) async throws {
        self.binary = binary
        self.http1Only = http1Only
        certificates = try await TestCertificates.make()
        directory = certificates.directory
        dotPort = try Self.freePort()
        dohPort = try Self.freePort()
        let keygen = try await ProcessRunner.run(binary, ["-gen-key", "-privkey-file", directory.appendingPathComponent("server.key").path,
                                                          "-pubkey-file", directory.appendingPathComponent("server.pub").path])
        guard keygen.status == 0 else { throw TestFailure("dnstt stand-in -gen-key failed: \(keygen.stderr)") }
    }

    /// Starts the server process and waits (at most 20 s) until both listeners accept.
    func launch() async throws {
        let process = Process()
        process.executableURL = binary
        process.arguments = ["-domain", Self.domain.description, "-privkey-file", directory.appendingPathComponent("server.key").path,
                             "-orport", "127.0.0.1:9", "-dot", "127.0.0.1:\(dotPort)", "-doh", "127.0.0.1:\(dohPort)",
                             "-tls-cert", certificates.certificateFile, "-tls-key", certificates.keyFile] + (http1Only ? ["-doh-http1"] : [])
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if Self.accepts(dotPort), Self.accepts(dohPort) { return }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        stop()
        throw TestFailure("the dnstt stand-in did not listen within 20 s")
    }

    /// Kills the server: its connections are closed by the kernel (the client sees the close).
    func stop() {
        guard let process else { return }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        self.process = nil
    }

    func remove() {
        stop()
        certificates.remove()
    }

    private static func freePort() throws -> UInt16 {
        // Bound, read, released: the stand-in binds it a moment later (a collision would fail the
        // launch loudly, not silently).
        try HeldLoopbackPort(listening: false).port
    }

    private static func accepts(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}

/// A real dnstt poll (spec §2.1: a fresh ClientID, 8 random padding bytes, no packet) as a DNS
/// query message, and the check that what came back is a dnstt response DnsttWire accepts.
enum DnsttPoll {
    static func query(domain: DnsName = DnsttStandIn.domain) throws -> [UInt8] {
        let padding = (0..<DnsttWire.pollPadding).map { _ in UInt8.random(in: 0...255) }
        let payload = try DnsttWire.queryPayload(clientID: ClientID.random(), padding: padding, packet: nil)
        let name = try DnsttWire.queryName(payload: payload, domain: domain)
        return DnsttWire.queryMessage(id: UInt16.random(in: 0...UInt16.max), name: name).encoded
    }

    /// Decodes `response` as a DNS message whose single TXT answer DnsttWire takes as a payload.
    static func expectUsable(_ response: [UInt8]?, domain: DnsName = DnsttStandIn.domain) throws {
        let bytes = try #require(response, "the link closed instead of answering")
        let message = try DnsMessage(decoding: bytes)
        #expect(message.isResponse)
        #expect(message.answers.count == 1)
        _ = try DnsttWire.responsePayload(message, domain: domain)
    }

    /// The next response from `link`, or a failure after `limit`.
    static func receive(from link: any ResolverLink, within limit: Duration = .seconds(20)) async throws -> [UInt8]? {
        let start = ContinuousClock.now
        let outcome = Task { try await link.receive() }
        let timer = Task {
            try await Task.sleep(for: limit)
            outcome.cancel()
        }
        defer { timer.cancel() }
        // A cancelled receive returns nil, as a closed link does; the clock tells them apart.
        let response = try await outcome.value
        if response == nil, ContinuousClock.now - start >= limit { throw TestFailure("no response within \(limit)") }
        return response
    }
}

/// The test bed's env file (POSTERN_TESTBED_ENV, written by scripts/testbed with bash quoting),
/// for the tests through Debian's unbound; nil outside a bed.
enum DnsttTestBed {
    static let values: [String: String]? = {
        guard let path = ProcessInfo.processInfo.environment["POSTERN_TESTBED_ENV"],
              let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        // Read here, not by a bash child: a test outside IntegrationTests must not hold a thread
        // of the cooperative pool waiting on a child (ProcessRunnerTests).
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("TB_") {
            guard let equals = line.firstIndex(of: "="),
                  let value = unquote(line[line.index(after: equals)...]) else { continue }
            values[String(line[..<equals])] = value
        }
        return values["TB_DNSTT"] == "1" ? values : nil
    }()

    /// One value as bash's `printf %q` wrote it: backslash escapes and '...' quoting; nil for the
    /// `$'...'` form (control characters), which no value these tests read needs.
    static func unquote(_ text: Substring) -> String? {
        var out = ""
        var index = text.startIndex
        var quoted = false
        while index < text.endIndex {
            let character = text[index]
            if quoted {
                if character == "'" { quoted = false } else { out.append(character) }
            } else if character == "'" {
                quoted = true
            } else if character == "\\" {
                index = text.index(after: index)
                guard index < text.endIndex else { return nil }
                out.append(text[index])
            } else if character == "$", text[text.index(after: index)...].hasPrefix("'") {
                return nil
            } else {
                out.append(character)
            }
            index = text.index(after: index)
        }
        return quoted ? nil : out
    }
}
