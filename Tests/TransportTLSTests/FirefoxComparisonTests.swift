import Foundation
import PosternTestSupport
import Testing
import TransportBase
import TransportTLS
import TransportWire

private let firefox = "/usr/bin/firefox-esr"

/// Debian's firefox-esr itself (headless, a throwaway profile) opens https://localhost:PORT/ on
/// a listener of ours that keeps its first flight; the firefoxESR profile's hello must equal it
/// field by field except where NSS 3.87 cannot follow (BrowserTLSProfile.firefoxESR): the
/// X25519MLKEM768 group and key share (0x11ec) and compress_certificate (27).
///
/// The profile sends every request except loopback's to a proxy on 127.0.0.1:1 that refuses, and
/// switches off Firefox's own background connections, so nothing leaves 127.0.0.0/8.
@Suite(.serialized, .enabled(if: FileManager.default.isExecutableFile(atPath: firefox), "needs Debian's firefox-esr"))
struct FirefoxComparisonTests {
    private static let preferences = """
        user_pref("network.proxy.type", 1);
        user_pref("network.proxy.http", "127.0.0.1");
        user_pref("network.proxy.http_port", 1);
        user_pref("network.proxy.ssl", "127.0.0.1");
        user_pref("network.proxy.ssl_port", 1);
        user_pref("network.proxy.allow_hijacking_localhost", false);
        user_pref("network.trr.mode", 5);
        user_pref("network.dns.disablePrefetch", true);
        user_pref("network.captive-portal-service.enabled", false);
        user_pref("network.connectivity-service.enabled", false);
        user_pref("browser.safebrowsing.malware.enabled", false);
        user_pref("browser.safebrowsing.phishing.enabled", false);
        user_pref("toolkit.telemetry.enabled", false);
        user_pref("datareporting.policy.dataSubmissionEnabled", false);
        user_pref("app.update.enabled", false);
        """

    /// Firefox's first flight to localhost on `listener`.
    private func firefoxHello(listener: LoopbackListener) async throws -> [UInt8] {
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("postern-firefox-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: profile) }
        try Self.preferences.write(to: profile.appendingPathComponent("user.js"), atomically: true, encoding: .utf8)
        let process = Process()
        // Started directly: SIGKILL to Firefox ends its content processes too (they exit when their
        // channel to it closes). setsid in between forked, so the pid here was not Firefox's and
        // Firefox outlived the test.
        process.executableURL = URL(fileURLWithPath: firefox)
        process.arguments = ["--headless", "--no-remote", "--profile", profile.path, "https://localhost:\(listener.port)/"]
        process.environment = ["HOME": profile.path, "PATH": "/usr/bin:/bin"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        // Firefox's hello is about 1.9 kB.
        return try await firstRecord(sentBy: process, to: listener, acceptWithin: .seconds(60), readWithin: .seconds(10))
    }

    @Test func profileMatchesFirefoxESRsOwnHelloExceptWhatNSS387Lacks() async throws {
        let listener = try LoopbackListener()
        defer { listener.close() }
        let theirs = try ClientHelloFingerprint(records: try await firefoxHello(listener: listener))

        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let server = try OpenSSLServer(certificates: certificates, arguments: ["-www"])
        defer { server.stop() }
        let socket = try await TCPSocket.connect(to: try TransportEndpoint(parsing: "127.0.0.1:\(try await server.port())"), timeout: .seconds(5))
        let recording = RecordingConnection(socket)
        defer { socket.close() }
        _ = try? await BrowserTLSStream.handshake(over: recording, configuration: BrowserTLSConfiguration(serverName: "localhost"))
        let ours = try ClientHelloFingerprint(records: try #require(recording.written.first))

        let postQuantum: UInt16 = 0x11ec
        #expect(ours.cipherSuites == theirs.cipherSuites)
        #expect(ours.extensions == theirs.extensions.filter { $0 != 27 })
        #expect(ours.groups == theirs.groups.filter { $0 != postQuantum })
        #expect(ours.keyShares.map(\.group) == theirs.keyShares.map(\.group).filter { $0 != postQuantum })
        #expect(ours.signatureAlgorithms == theirs.signatureAlgorithms)
        #expect(ours.supportedVersions == theirs.supportedVersions)
        #expect(ours.applicationProtocols == theirs.applicationProtocols)
        #expect(ours.pointFormats == theirs.pointFormats)
        #expect(ours.legacyVersion == theirs.legacyVersion)
        // JA4: the same first part but for the one extension, and the same cipher part.
        let (ourParts, theirParts) = (ours.ja4.split(separator: "_"), theirs.ja4.split(separator: "_"))
        #expect(ourParts[1] == theirParts[1])
        #expect(ourParts[0] == "t13d1616h2" && theirParts[0] == "t13d1617h2", "\(ours.ja4) vs \(theirs.ja4)")

        // Field by field (issue #21's ground truth): every field equal but those NSS 3.87 cannot
        // reach, and those differ.
        let differing = HelloFields(ours).differences(from: HelloFields(theirs))
        #expect(Set(differing.map(\.name)) == HelloFields.unreachableByNSS387,
                "fields that differ from Firefox's: \(differing.map { "\($0.name) (ours \($0.ours), Firefox \($0.theirs))" })")
    }

    /// Drift: today's firefox-esr against the hello recorded from 153.8.0esr. A browser update that
    /// changes its hello fails here, naming its version and each changed field, so the profile and
    /// docs/FINGERPRINTS.md can follow it.
    @Test func firefoxsHelloIsTheRecordedOneOrItsDriftIsReported() async throws {
        let version = try await ProcessRunner.run(URL(fileURLWithPath: firefox), ["--version"]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let listener = try LoopbackListener()
        defer { listener.close() }
        let theirs = HelloFields(try ClientHelloFingerprint(records: try await firefoxHello(listener: listener)))
        let drift = theirs.differences(from: .recordedFirefoxESR)
        print("\(version): \(drift.isEmpty ? "hello as recorded from \(HelloFields.recordedFirefoxVersion)" : "\(drift.count) fields drifted")")
        #expect(drift.isEmpty, """
            drift: \(version) (recorded: \(HelloFields.recordedFirefoxVersion)) changed \(drift.map { "\($0.name): now \($0.ours), recorded \($0.theirs)" }.joined(separator: "; "))
            """)
    }
}
