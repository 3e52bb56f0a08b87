import Foundation
import PosternTestSupport

/// Debian's nginx on 127.0.0.1 with TLS and HTTP/2 (ALPN h2, http/1.1), in one process
/// (`master_process off`) under a private directory: a real HTTP/2 server for HTTP2Connection.
/// `/echo` returns the request body (Debian's libnginx-mod-http-echo), `/headers` sends
/// `headerCount` extra response header fields, everything else is a file under `www/`.
final class NginxHTTP2Server: @unchecked Sendable {
    let port: UInt16
    let directory: URL
    private let process: Process

    /// `files`: name → contents, served from the root. `headerCount` header fields of 100 bytes each on /headers.
    init(certificates: TestCertificates, files: [String: [UInt8]] = [:], headerCount: Int = 0) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("www"), withIntermediateDirectories: true)
        for (name, contents) in files {
            try Data(contents).write(to: directory.appendingPathComponent("www/\(name)"))
        }
        let extraHeaders = (0..<headerCount).map { "add_header x-filler-\($0) \(String(repeating: "v", count: 100)) always;" }
            .joined(separator: "\n            ")
        // nginx cannot listen on port 0: try kernel-chosen free ports until one binds.
        var lastError = ""
        for _ in 0..<10 {
            var candidate: HeldLoopbackPort? = try HeldLoopbackPort(listening: false)
            let port = candidate!.port
            candidate = nil  // nginx binds it next
            let root = directory.path
            let configuration = """
                load_module /usr/lib/nginx/modules/ngx_http_echo_module.so;
                master_process off;
                daemon off;
                pid \(root)/nginx.pid;
                error_log \(root)/error.log warn;
                events { worker_connections 128; }
                http {
                    access_log off;
                    client_body_temp_path \(root)/body;
                    proxy_temp_path \(root)/proxy;
                    fastcgi_temp_path \(root)/fastcgi;
                    uwsgi_temp_path \(root)/uwsgi;
                    scgi_temp_path \(root)/scgi;
                    large_client_header_buffers 4 16k;
                    server {
                        listen 127.0.0.1:\(port) ssl http2;
                        ssl_certificate \(certificates.certificateFile);
                        ssl_certificate_key \(certificates.keyFile);
                        root \(root)/www;
                        location = /echo { client_body_buffer_size 1m; client_max_body_size 1m; echo_read_request_body; echo_request_body; }
                        location = /headers {
                            \(extraHeaders)
                            return 200 "headers\\n";
                        }
                    }
                }
                """
            try configuration.write(to: directory.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
            process.arguments = ["-p", root, "-c", "\(root)/nginx.conf", "-e", "\(root)/error.log"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Up when the port accepts; gone when nginx exits (a port taken meanwhile).
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline, process.isRunning {
                if Self.accepts(port) {
                    self.port = port
                    self.process = process
                    return
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            lastError = (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
        }
        try? FileManager.default.removeItem(at: directory)
        throw TestFailure("nginx did not start: \(lastError)")
    }

    private static func accepts(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}
