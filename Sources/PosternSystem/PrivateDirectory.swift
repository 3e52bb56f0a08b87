#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A directory only this user may enter: where Postern keeps settings, state and a plugin's
/// `TOR_PT_STATE_LOCATION`.
///
/// ``prepare(_:)`` creates each missing component 0700 (the XDG spec asks that of ~/.config too)
/// and then checks the directory itself, whether it was just made or was there before:
/// - another user's directory is refused: its owner could read or replace what we put in it;
/// - a directory of ours that others may read or write is made 0700, the way tor treats its
///   DataDirectory. It is ours, so nothing is lost by closing it, and refusing would stop a user
///   whose umask or file manager made it 0755 over something Postern can set right itself;
/// - a path that is not a directory (or a dangling link) is refused.
public enum PrivateDirectory {
    /// Why a directory cannot be used; `path` is the component that failed.
    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "\(path): \(reason)" }
    }

    /// Creates `path` (and its missing parents) 0700, or checks the existing one as described above.
    public static func prepare(_ path: String) throws(Failure) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw Failure(path: prefix, reason: "cannot be created: \(String(cString: strerror(errno)))")
            }
        }
        try check(prefix)
    }

    private static func check(_ path: String) throws(Failure) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw Failure(path: path, reason: "cannot be examined: \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw Failure(path: path, reason: "is not a directory")
        }
        guard info.st_uid == geteuid() else {
            throw Failure(path: path, reason: "belongs to another user (uid \(info.st_uid)); Postern keeps its files only in directories of its own user")
        }
        if info.st_mode & 0o077 != 0, chmod(path, 0o700) != 0 {
            throw Failure(path: path, reason: "is open to other users and cannot be made private: \(String(cString: strerror(errno)))")
        }
    }
}
