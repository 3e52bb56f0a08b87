#if canImport(Glibc)
import Glibc
#endif

/// What /proc says about a process's open files: which sockets it holds, and its effective uid.
/// Used to prove that a loopback socket belongs to a given process (a port number alone proves
/// nothing: any local account may listen on or connect from a free port).
public enum ProcessDescriptors {
    /// Whether process `pid` (0: this process) has a descriptor on the socket with `inode`. False
    /// when its /proc/PID/fd cannot be read (another account's process, without privilege): the
    /// caller cannot prove anything then.
    public static func holdsSocket(pid: Int32, inode: UInt64) -> Bool {
        guard inode != 0 else { return false }
        let directory = pid == 0 ? "/proc/self/fd" : "/proc/\(pid)/fd"
        guard let handle = opendir(directory) else { return false }
        defer { closedir(handle) }
        let wanted = "socket:[\(inode)]"
        var target = [CChar](repeating: 0, count: 64)
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name.first?.isNumber == true else { continue }
            let length = readlink("\(directory)/\(name)", &target, target.count - 1)
            guard length > 0 else { continue }
            let link = target.prefix(length).withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
            if link == wanted { return true }
        }
        return false
    }

    /// The effective uid of process `pid` from /proc/PID/status ("Uid: real effective saved fs").
    public static func effectiveUID(pid: Int32) -> UInt32? {
        guard let status = readWholeFile("/proc/\(pid)/status", limit: 1 << 16) else { return nil }
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Uid:") }) else { return nil }
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        return fields.count >= 3 ? UInt32(fields[2]) : nil
    }

    /// A whole /proc file, read until EOF (their stat size is 0, so a read sized by it gets nothing
    /// or the first page); nil when it cannot be opened or exceeds `limit` bytes.
    public static func readWholeFile(_ path: String, limit: Int) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { break }
            guard bytes.count + count <= limit else { return nil }
            bytes += chunk.prefix(count)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
