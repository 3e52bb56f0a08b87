import Foundation

/// A CA and a server certificate it signed (names `postern.test` and 127.0.0.1, P-256), made by
/// the openssl command at test time in a private temporary directory. For the TLS client's tests
/// (TransportTLSTests) and the transports' TLS dials (WebtunnelTests).
public struct TestCertificates: Sendable {
    public let directory: URL
    public var caFile: String { directory.appendingPathComponent("ca.pem").path }
    public var certificateFile: String { directory.appendingPathComponent("leaf.pem").path }
    public var keyFile: String { directory.appendingPathComponent("leaf.key").path }
    public static let serverName = "postern.test"
    // A fresh CA name and serial every time: NSS keeps the certificates it has seen in one
    // process-wide store and refuses a second, different certificate with the same issuer and
    // serial (SEC_ERROR_REUSED_ISSUER_AND_SERIAL), as Firefox does.

    public static func make() async throws -> TestCertificates {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        try "subjectAltName=DNS:\(serverName),IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n"
            .write(toFile: path("leaf.ext"), atomically: true, encoding: .utf8)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try await openssl(["req", "-x509"] + ec + ["-days", "2", "-subj", "/CN=Postern Test CA \(UUID().uuidString)", "-keyout", path("ca.key"), "-out", path("ca.pem")])
        try await openssl(["req", "-new"] + ec + ["-subj", "/CN=\(serverName)", "-keyout", path("leaf.key"), "-out", path("leaf.csr")])
        try await openssl(["x509", "-req", "-in", path("leaf.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"), "-set_serial", "\(UInt64.random(in: 2...UInt64(Int64.max)))",
                           "-days", "1", "-extfile", path("leaf.ext"), "-out", path("leaf.pem")])
        return TestCertificates(directory: directory)
    }

    public func remove() { try? FileManager.default.removeItem(at: directory) }

    private static func openssl(_ arguments: [String]) async throws {
        let result = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/openssl"), arguments)
        guard result.status == 0 else { throw TestFailure("openssl \(arguments[0]) failed: \(result.stderr)") }
    }
}

/// A test's own failure with a message (a peer process that did not start, a tool that failed).
public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
