import Foundation
import PosternTestSupport
import Testing

/// Issue 9 item 5, the hygiene checks: a running `postern` listens on loopback only, and everything
/// it keeps on disk is private (files 0600, directories 0700). Each check is also run against a
/// planted violation, so a check that cannot fail would show here.
@Suite struct HygieneTests {
    /// A TCP socket in LISTEN state, as /proc/net/tcp{,6} describes it.
    struct Listener: Equatable, CustomStringConvertible {
        var address: [UInt8]
        var port: UInt16
        var inode: UInt64
        var isLoopback: Bool {
            if address.count == 4 { return address[0] == 127 }
            // ::1, or an IPv4-mapped 127.x address (::ffff:127.x.y.z).
            if address == [UInt8](repeating: 0, count: 15) + [1] { return true }
            return address.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff] && address[12] == 127
        }
        var description: String {
            address.count == 4 ? address.map(String.init).joined(separator: ".") + ":\(port)"
                : "[" + address.map { String(format: "%02x", $0) }.joined() + "]:\(port)"
        }
    }

    /// LISTEN sockets in a /proc/net/tcp or tcp6 table. The kernel prints addresses as the raw
    /// in-memory words in hex: each 32-bit group little-endian on x86 and arm64.
    static func listeners(inProcTable text: String) -> [Listener] {
        text.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count > 9, fields[3] == "0A" else { return nil }   // 0A = TCP_LISTEN
            let local = fields[1].split(separator: ":")
            guard local.count == 2, let port = UInt16(local[1], radix: 16), let inode = UInt64(fields[9]) else { return nil }
            let hex = Array(local[0])
            var address: [UInt8] = []
            for word in stride(from: 0, to: hex.count, by: 8) {
                let bytes = stride(from: word, to: word + 8, by: 2).compactMap { UInt8(String(hex[$0..<$0 + 2]), radix: 16) }
                address += bytes.reversed()
            }
            return Listener(address: address, port: port, inode: inode)
        }
    }

    /// Socket inodes open in a process (any of its threads share the table).
    static func socketInodes(pid: Int32) -> Set<UInt64> {
        let directory = "/proc/\(pid)/fd"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return Set(entries.compactMap { entry in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\(entry)"),
                  target.hasPrefix("socket:[") else { return nil }
            return UInt64(target.dropFirst(8).dropLast())
        })
    }

    /// The LISTEN sockets that belong to `pid`.
    static func listeners(ofProcess pid: Int32) -> [Listener] {
        let inodes = socketInodes(pid: pid)
        // FileHandle reads to the end; String(contentsOfFile:) stops after the first page of a
        // procfs table, so with a few dozen other sockets in the namespace (the unit tests running
        // in parallel) a listener fell off the list.
        let tables = ["tcp", "tcp6"].map { table -> String in
            let data = (try? FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/\(pid)/net/\(table)")).readToEnd()) ?? nil
            return data.map { String(decoding: $0, as: UTF8.self) } ?? ""
        }
        return tables.flatMap(listeners(inProcTable:)).filter { inodes.contains($0.inode) }
    }

    /// Paths under `root` that are not private: directories other than 0700, files with any group
    /// or other permission bit. In tor's data directory tor picks the modes of its own files (its log
    /// is 0640): there a file may be group-readable, never group-writable or open to others, and the
    /// directory itself must be 0700 like every other.
    static func nonPrivatePaths(under root: URL, torDataDirectory: String? = nil) -> [String] {
        var found: [String] = []
        func mode(_ path: String) -> Int { ((try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int ?? 0o777) & 0o777 }
        if mode(root.path) != 0o700 { found.append(".: \(String(mode(root.path), radix: 8))") }
        let walker = FileManager.default.enumerator(atPath: root.path)
        while let relative = walker?.nextObject() as? String {
            let path = root.appendingPathComponent(relative).path
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            let bits = mode(path)
            let insideTor = torDataDirectory.map { relative.hasPrefix($0 + "/") } ?? false
            if isDirectory.boolValue {
                if bits != 0o700 { found.append("\(relative)/: \(String(bits, radix: 8))") }
            } else if insideTor ? bits & 0o027 != 0 : bits & 0o077 != 0 {
                found.append("\(relative): \(String(bits, radix: 8))")
            }
        }
        return found
    }

    // MARK: the checks against planted violations

    @Test func listenerCheckFlagsANonLoopbackSocket() {
        // Real lines from /proc/net/tcp and tcp6: 127.0.0.1:39050, 0.0.0.0:22, 10.1.2.3:80 (LISTEN),
        // an ESTABLISHED 0.0.0.0 line, ::1 and :: listeners, and an IPv4-mapped 127.0.0.1.
        let tcp = """
          sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
           0: 0100007F:9A3A 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0000000000000000 100 0 0 10 0
           1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1002 1 0000000000000000 100 0 0 10 0
           2: 0302010A:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1003 1 0000000000000000 100 0 0 10 0
           3: 00000000:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 1004 1 0000000000000000 100 0 0 10 0
        """
        let tcp6 = """
          sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
           0: 00000000000000000000000001000000:9A3B 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2001 1 0000000000000000 100 0 0 10 0
           1: 00000000000000000000000000000000:01BB 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2002 1 0000000000000000 100 0 0 10 0
           2: 0000000000000000FFFF00000100007F:9A3C 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2003 1 0000000000000000 100 0 0 10 0
        """
        let found = Self.listeners(inProcTable: tcp) + Self.listeners(inProcTable: tcp6)
        #expect(found.map(\.description) == ["127.0.0.1:39482", "0.0.0.0:22", "10.1.2.3:80",
                                             "[00000000000000000000000000000001]:39483",
                                             "[00000000000000000000000000000000]:443",
                                             "[00000000000000000000ffff7f000001]:39484"])
        #expect(found.filter { !$0.isLoopback }.map(\.port) == [22, 80, 443])
    }

    @Test func privacyCheckFlagsAReadableFileAndAnOpenDirectory() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("postern-hygiene-\(UUID())")
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root.appendingPathComponent("state/tor"), withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: root.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: root.appendingPathComponent("state").path)
        _ = FileManager.default.createFile(atPath: root.appendingPathComponent("bridges.json").path, contents: Data("{}".utf8),
                                       attributes: [.posixPermissions: 0o600])
        _ = FileManager.default.createFile(atPath: root.appendingPathComponent("state/tor/tor.log").path, contents: Data(),
                                       attributes: [.posixPermissions: 0o640])
        #expect(Self.nonPrivatePaths(under: root, torDataDirectory: "state/tor").isEmpty)

        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: root.appendingPathComponent("bridges.json").path)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: root.appendingPathComponent("state").path)
        try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: root.appendingPathComponent("state/tor/tor.log").path)
        #expect(Self.nonPrivatePaths(under: root, torDataDirectory: "state/tor").sorted()
                == ["bridges.json: 644", "state/: 755", "state/tor/tor.log: 666"])
    }

    // MARK: the checks against a real run

    /// `postern run` with an obfs4 bridge (unreachable: 127.0.0.3 port 9, nothing listens) opens
    /// tor's SOCKS port and the obfs4 PT listener; every listening socket of the process is on
    /// loopback, and every file it and the settings commands wrote is private. When the bridge
    /// refuses, neither the run's output nor tor's log names it (tor's own warning for a failed
    /// transport connection does: "Proxy Client: unable to connect ... with ADDRESS RSA_ID=...").
    @Test func runningPosternListensOnLoopbackOnlyAndKeepsItsFilesPrivate() async throws {
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("postern-hygiene-run-\(UUID())")
        defer { try? FileManager.default.removeItem(at: config) }
        let fingerprint = "75D2B513BA3CF4D1210FC35B4D61C7A6BFAECF3B"
        let cert = "tUKKU8cSnvHFdeytUFPi9+Cqaw3fWpvmyFyHQMPmWQ9zUjINSTdG9sMySEqtoAuAQEF9YA"
        let bridge = "obfs4 127.0.0.3:9 \(fingerprint) cert=\(cert) iat-mode=0"
        for command in [["bridges", "add", bridge], ["relays", "add", "relay.example.org"], ["transport", "use", "obfs4"]] {
            let result = try await ProcessRunner.run(ProcessRunner.postern, command + ["--config-dir", config.path])
            #expect(result.status == 0, "\(command): \(result.stderr)")
        }

        let process = Process()
        process.executableURL = ProcessRunner.postern
        process.arguments = ["run", "--config-dir", config.path, "--socks", "39177", "--json", "--stall-timeout", "60"]
        let outputFile = config.deletingLastPathComponent().appendingPathComponent("\(config.lastPathComponent).out")
        defer { try? FileManager.default.removeItem(at: outputFile) }
        _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
        let output = try FileHandle(forWritingTo: outputFile)
        process.standardOutput = output
        process.standardError = output
        try process.run()
        // SIGKILL: children of the test process inherit its blocked signal mask.
        defer { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }

        // tor's SOCKS port and the PT listener (tor starts the transport when it needs the bridge).
        var listeners: [Listener] = []
        let deadline = Date().addingTimeInterval(45)
        while Date() < deadline, process.isRunning {
            listeners = Self.listeners(ofProcess: process.processIdentifier)
            if listeners.contains(where: { $0.port == 39177 }) && listeners.count >= 2 { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(process.isRunning, "postern run exited early")
        #expect(listeners.contains { $0.port == 39177 }, "tor's SOCKS port is listening: \(listeners)")
        #expect(listeners.count >= 2, "the SOCKS port and the obfs4 PT listener: \(listeners)")
        let exposed = listeners.filter { !$0.isLoopback }
        #expect(exposed.isEmpty, "non-loopback listeners: \(exposed)")

        // The transport's refusal goes to tor as a SOCKS failure, which tor logs at once and retries
        // within seconds: wait for the run to report it, then give tor's log two seconds.
        var runOutput = ""
        let deadline2 = Date().addingTimeInterval(30)
        while Date() < deadline2, !runOutput.contains("dial-failed") {
            try await Task.sleep(for: .milliseconds(300))
            runOutput = (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
        }
        try await Task.sleep(for: .seconds(2))
        let log = (try? String(contentsOf: config.appendingPathComponent("state/tor/tor.log"), encoding: .utf8)) ?? ""
        #expect(runOutput.contains("dial-failed"), "the run reported the refused bridge: \(runOutput.suffix(800))")
        // tor's warning is there, with the bridge taken out of it (TorLogRelay).
        #expect(log.contains("Proxy Client: unable to connect") && log.contains("[scrubbed]"), "tor.log:\n\(log)")
        for secret in ["127.0.0.3", fingerprint, cert] {
            #expect(!log.contains(secret), "bridge data in tor.log:\n\(log)")
            #expect(!runOutput.contains(secret), "bridge data in the run's output")
        }

        let written = (FileManager.default.enumerator(atPath: config.path)?.allObjects as? [String]) ?? []
        #expect(written.contains("bridges.json") && written.contains("state/run-status.json")
                && written.contains("state/tor/tor.log") && written.contains("state/tor/empty-torrc"), "files: \(written)")
        let open = Self.nonPrivatePaths(under: config, torDataDirectory: "state/tor")
        #expect(open.isEmpty, "not private: \(open)")
    }
}
