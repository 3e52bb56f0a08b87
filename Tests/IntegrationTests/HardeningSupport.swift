import PosternTestSupport
import Foundation
import Testing

/// Every packet that sockets of one group id send inside the test bed's namespace, captured through
/// an nftables table of our own (NFLOG, read by dumpcap on `nflog:N`), plus every packet anybody
/// sends to a set of "app" destinations (the page server, DNS).
///
/// Why the group: the test bed's network processes all carry group 64123 and clients carry any
/// other; a `postern run` started with a group of its own (`RunningPostern(group:)`) is the only
/// process with that group, so `meta skgid` tells its packets from everything else on `lo` — the
/// relays', the bridges', the proxies', curl's. The log rule sits at priority -10, before the
/// censor's chain (priority 0), so packets the censor drops are logged too.
final class GroupPacketLog: @unchecked Sendable {
    static let clientPrefix = "client"
    static let appPrefix = "app"

    let group: UInt32
    private let table: String
    private let holdTable: String
    private let dumpcap: Dumpcap
    var file: URL { dumpcap.file }

    /// - Parameters:
    ///   - appDestinations: nftables matches (e.g. `ip daddr 127.0.4.1 tcp dport 8080`) whose
    ///     packets are logged whoever sends them, with the prefix "app".
    init(group: UInt32, nflogGroup: Int, appDestinations: [String], directory: URL) throws {
        self.group = group
        table = "postern_client_\(group)"
        holdTable = "postern_hold_\(group)"
        // queue-threshold 1: without it libpcap's nflog reader got the first packet of a batch only.
        let logTo = "log prefix \"%s\" group \(nflogGroup) snaplen 128 queue-threshold 1"
        var rules = ["meta skgid \(group) counter " + logTo.replacingOccurrences(of: "%s", with: Self.clientPrefix)]
        for destination in appDestinations {
            rules.append("\(destination) counter " + logTo.replacingOccurrences(of: "%s", with: Self.appPrefix))
        }
        try Self.nft("""
        table inet \(table)
        delete table inet \(table)
        table inet \(table) {
          chain output {
            type filter hook output priority -10; policy accept;
            \(rules.joined(separator: "\n    "))
          }
        }
        """)
        dumpcap = try Dumpcap(capture: ["-i", "nflog:\(nflogGroup)"], file: directory.appendingPathComponent("client-\(group).pcapng"),
                              log: directory.appendingPathComponent("dumpcap-\(group).log"))
    }

    func waitUntilCapturing() async throws { try await dumpcap.waitUntilCapturing() }

    /// While held, the group's packets to anything but 127.0.0.1 are dropped (after being logged):
    /// its tor cannot reach the network, so it cannot be ready, whatever the censor lets through.
    func hold() throws {
        try Self.nft("""
        table inet \(holdTable)
        delete table inet \(holdTable)
        table inet \(holdTable) {
          chain output {
            type filter hook output priority -5; policy accept;
            meta skgid \(group) ip daddr != 127.0.0.1 counter drop
            meta skgid \(group) meta nfproto ipv6 counter drop
          }
        }
        """)
    }

    func release() throws {
        try Self.nft("delete table inet \(holdTable)")
    }

    /// Packets the client rule matched so far (nftables' own count, to compare with the capture).
    func clientRuleCount() throws -> Int {
        let result = try ProcessRunner.runBlocking(URL(fileURLWithPath: "/usr/sbin/nft"), ["list", "table", "inet", table])
        guard let line = result.stdout.split(separator: "\n").first(where: { $0.contains("meta skgid") }) else { return -1 }
        let words = line.split(separator: " ")
        guard let index = words.firstIndex(of: "packets"), index + 1 < words.count else { return -1 }
        return Int(words[index + 1]) ?? -1
    }

    func stopCapture() { dumpcap.stop() }

    /// Stops the capture and removes both tables. Safe to call twice.
    func remove() {
        stopCapture()
        _ = try? ProcessRunner.runBlocking(URL(fileURLWithPath: "/usr/sbin/nft"), ["delete", "table", "inet", holdTable])
        _ = try? ProcessRunner.runBlocking(URL(fileURLWithPath: "/usr/sbin/nft"), ["delete", "table", "inet", table])
    }

    var dumpcapLog: String { dumpcap.logText }

    struct Packet: CustomStringConvertible {
        let time: Double
        let prefix: String
        let isIPv6: Bool
        let source: String, destination: String
        /// "tcp", "udp" or the IP protocol number.
        let proto: String
        let sourcePort: Int, destinationPort: Int
        /// A TCP SYN: the first packet of a connection.
        let isSyn: Bool

        var description: String { "\(proto) \(source):\(sourcePort) -> \(destination):\(destinationPort)" }
    }

    func packets() throws -> [Packet] {
        let fields = ["frame.time_epoch", "nflog.prefix", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "ip.proto",
                      "tcp.srcport", "tcp.dstport", "udp.srcport", "udp.dstport", "tcp.flags.syn"]
        let result = try ProcessRunner.runBlocking(URL(fileURLWithPath: "/usr/bin/tshark"),
                                           ["-r", file.path, "-T", "fields", "-E", "separator=|"] + fields.flatMap { ["-e", $0] })
        #expect(result.status == 0, "tshark: \(result.stderr)")
        return result.stdout.split(separator: "\n").compactMap { line in
            let f = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            guard f.count >= fields.count, let time = Double(f[0]) else { return nil }
            let isIPv6 = f[2].isEmpty
            let proto = !f[7].isEmpty ? "tcp" : !f[9].isEmpty ? "udp" : (f[6].isEmpty ? "?" : f[6])
            return Packet(time: time, prefix: f[1], isIPv6: isIPv6,
                          source: isIPv6 ? f[4] : f[2], destination: isIPv6 ? f[5] : f[3], proto: proto,
                          sourcePort: Int(f[7]) ?? Int(f[9]) ?? 0, destinationPort: Int(f[8]) ?? Int(f[10]) ?? 0,
                          isSyn: f[11] == "1" || f[11] == "True")
        }
    }

    private static func nft(_ ruleset: String) throws {
        let result = try ProcessRunner.runBlocking(URL(fileURLWithPath: "/usr/sbin/nft"), ["-f", "-"], stdin: ruleset)
        #expect(result.status == 0, "nft: \(result.stderr)\n\(ruleset)")
    }
}

/// What /proc says about processes and sockets (of the namespace the test runs in).
enum ProcView {
    struct Socket {
        let localAddress: String, localPort: Int
        let remoteAddress: String, remotePort: Int
        /// /proc/net/tcp state: 01 established, 0A listening.
        let state: String
        let inode: String
    }

    /// A table of /proc/net, e.g. tcp (IPv4).
    static func sockets(_ table: String) -> [Socket] {
        guard let text = readWhole("/proc/net/\(table)") else { return [] }
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let f = line.split(separator: " ")
            guard f.count > 9 else { return nil }
            let (la, lp) = endpoint(f[1]), (ra, rp) = endpoint(f[2])
            return Socket(localAddress: la, localPort: lp, remoteAddress: ra, remotePort: rp, state: String(f[3]), inode: String(f[9]))
        }
    }

    /// procfs files claim size 0 and hand out a page per read: read until EOF.
    static func readWhole(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            data.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// "0100007F:1F90" → ("127.0.0.1", 8080): the address is a little-endian u32 in hex.
    private static func endpoint(_ text: Substring) -> (String, Int) {
        let parts = text.split(separator: ":")
        guard parts.count == 2, let raw = UInt32(parts[0], radix: 16), let port = Int(parts[1], radix: 16) else { return ("?", 0) }
        let address = [raw & 0xff, (raw >> 8) & 0xff, (raw >> 16) & 0xff, raw >> 24].map(String.init).joined(separator: ".")
        return (address, port)
    }

    static func socketInodes(of pid: Int32) -> Set<String> {
        let directory = "/proc/\(pid)/fd"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var inodes: Set<String> = []
        for name in names {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\(name)"),
                  target.hasPrefix("socket:[") else { continue }
            inodes.insert(String(target.dropFirst("socket:[".count).dropLast()))
        }
        return inodes
    }

    /// The process's TCP sockets in `state` (or all).
    static func tcpSockets(of pid: Int32, state: String? = nil) -> [Socket] {
        let inodes = socketInodes(of: pid)
        return sockets("tcp").filter { inodes.contains($0.inode) && (state == nil || $0.state == state) }
    }

    static func isAlive(_ pid: Int32) -> Bool { kill(pid, 0) == 0 }

    /// A field of /proc/PID/status, e.g. "VmRSS" → "123456 kB" → 123456.
    static func statusKiB(_ pid: Int32, _ key: String) -> Int? {
        guard let text = readWhole("/proc/\(pid)/status"),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key + ":") }) else { return nil }
        return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) }
    }

    /// Every live process as (pid, parent pid, command name, real gid).
    static func processes() -> [(pid: Int32, parent: Int32, name: String, gid: UInt32)] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return names.compactMap { name in
            guard let pid = Int32(name),
                  let status = readWhole("/proc/\(pid)/status") else { return nil }
            var parent: Int32 = 0, command = "", gid: UInt32 = 0
            for line in status.split(separator: "\n") {
                let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
                guard words.count >= 2 else { continue }
                switch words[0] {
                case "Name:": command = String(words[1])
                case "PPid:": parent = Int32(words[1]) ?? 0
                case "Gid:": gid = UInt32(words[1]) ?? 0
                default: break
                }
            }
            return (pid, parent, command, gid)
        }
    }

    static func children(of pid: Int32) -> [Int32] { processes().filter { $0.parent == pid }.map(\.pid) }
}

extension TestBed {
    /// The PID a test-bed process was recorded under (`DIR/pids/NAME.pid`: "PID STARTTIME").
    func recordedPID(_ name: String) -> Int32? {
        guard let text = try? String(contentsOfFile: "\(directory)/pids/\(name).pid", encoding: .utf8) else { return nil }
        return text.split(separator: " ").first.flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// The bridge line of an env key, e.g. TB_BRIDGE_OBFS4.
    func bridgeLine(_ key: String) -> String { self[key] }

    /// `scripts/testbed status`: 0 when every recorded process is alive.
    func statusCode() throws -> Int32 {
        try ProcessRunner.runBlocking(Self.script, ["status", "--dir", directory]).status
    }
}

/// Seconds since the epoch, the clock the capture's timestamps use.
func wallClock() -> Double { Date().timeIntervalSince1970 }

extension Duration {
    var inSeconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
