#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A directory only this user may enter: where Postern keeps settings, state and a plugin's
/// `TOR_PT_STATE_LOCATION`.
///
/// ``prepare(_:)`` walks the path one component at a time from `/`, each step an `openat` of the
/// directory before it that never follows a link, so what is checked is what is used:
/// - every directory above the target (its parents) must belong to this user or root, and may be
///   writable by others only if it is sticky (as /tmp is); group write counts as others' unless
///   the group is this user's own private group with no other member. Anyone else who can write a parent can
///   rename the target away after the check and put a directory of their own in its place, so such
///   a path is refused, naming the parent. Postern goes on using the path, not the descriptor, and
///   this rule is what makes the path keep leading to the directory that was checked;
/// - a link above the target is followed (a home or ~/.config that is a link stays usable) if it
///   belongs to this user or root: in a sticky directory another account may make links too;
/// - a missing component is created 0700 (the XDG spec asks that of ~/.config too);
/// - the target itself must be a directory, not a link: a link there could lead to any directory
///   of ours, and closing that one (say ~/.ssh) is not ours to do;
/// - another user's target is refused: its owner could read or replace what we put in it;
/// - a target of ours that others may read or write is made 0700, the way tor treats its
///   DataDirectory. It is ours, so nothing is lost by closing it, and refusing would stop a user
///   whose umask or file manager made it 0755 over something Postern can set right itself.
public enum PrivateDirectory {
    /// Whether `gid` is this process's own group with no member but this user (a user private
    /// group), so that group write access gives no other account anything.
    static func isOwnPrivateGroup(_ gid: gid_t) -> Bool {
        guard gid == getegid() else { return false }
        var user = passwd(), group = Glibc.group()
        var userResult: UnsafeMutablePointer<passwd>?, groupResult: UnsafeMutablePointer<Glibc.group>?
        var userBuffer = [CChar](repeating: 0, count: 16_384), groupBuffer = [CChar](repeating: 0, count: 65_536)
        guard getpwuid_r(geteuid(), &user, &userBuffer, userBuffer.count, &userResult) == 0, userResult != nil,
              getgrgid_r(gid, &group, &groupBuffer, groupBuffer.count, &groupResult) == 0, groupResult != nil,
              let ownName = user.pw_name.map({ String(cString: $0) }) else { return false }
        var member = group.gr_mem
        while let entry = member?.pointee {
            if String(cString: entry) != ownName { return false }
            member = member?.advanced(by: 1)
        }
        return true
    }

    /// Why a directory cannot be used.
    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// The directory that was asked for, as given.
        public let directory: String
        /// The component that failed: the target or one of its parents, with links resolved.
        public let path: String
        /// Whether `path` is a parent of the target rather than the target itself.
        public let isParent: Bool
        public let reason: String

        /// "PATH REASON" for the target; "DIRECTORY cannot be used: its parent PATH REASON" for a parent.
        public var description: String {
            isParent ? "\(directory) cannot be used: its parent \(path) \(reason)" : "\(path) \(reason)"
        }
    }

    /// Creates `directory` (and its missing parents) 0700, or checks the existing one as described
    /// on the type.
    public static func prepare(_ directory: String) throws(Failure) {
        var walk = try Walk(directory: directory)
        defer { walk.release() }
        try walk.run()
    }

    /// Links followed on the way before the path counts as a loop (Linux's own limit).
    static let maximumLinks = 40

    /// The walk's state: the directory reached so far (a descriptor and its resolved path) and the
    /// components still to go.
    private struct Walk {
        let directory: String
        var current: Int32 = -1
        var resolved: [String] = []
        /// Components still to walk, the next one last.
        var pending: [String]
        var linksFollowed = 0

        init(directory: String) throws(Failure) {
            self.directory = directory
            var absolute = directory
            if !directory.hasPrefix("/") {
                guard let base = getcwd(nil, 0) else {
                    throw Failure(directory: directory, path: directory, isParent: false,
                                  reason: "cannot be found: the current directory is unknown (\(describeErrno(errno)))")
                }
                absolute = String(cString: base) + "/" + directory
                free(base)
            }
            pending = Self.components(absolute).reversed()
        }

        mutating func release() {
            if current >= 0 { close(current) }
            current = -1
        }

        var resolvedPath: String { "/" + resolved.joined(separator: "/") }

        private func failure(_ path: String, isParent: Bool, _ reason: String) -> Failure {
            Failure(directory: directory, path: path, isParent: isParent, reason: reason)
        }

        mutating func run() throws(Failure) {
            try enterRoot()
            while let name = pending.popLast() {
                if name == ".." {
                    if !resolved.isEmpty { resolved.removeLast() }
                    try enter(openat(current, "..", Self.searchOnly | O_DIRECTORY | O_CLOEXEC))
                    continue
                }
                let isTarget = pending.isEmpty
                let path = resolvedPath == "/" ? "/" + name : resolvedPath + "/" + name
                var opened = openat(current, name, Self.searchOnly | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                if opened < 0 && errno == ENOENT {
                    if mkdirat(current, name, 0o700) != 0 && errno != EEXIST {
                        throw failure(path, isParent: !isTarget, "cannot be created: \(describeErrno(errno))")
                    }
                    opened = openat(current, name, Self.searchOnly | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                }
                if opened < 0 {
                    let number = errno
                    // A link is ENOTDIR under O_PATH (which would open the link itself, but
                    // O_DIRECTORY refuses it) and ELOOP without it.
                    guard number == ELOOP || number == ENOTDIR else {
                        throw failure(path, isParent: !isTarget, "cannot be opened: \(describeErrno(number))")
                    }
                    try followLink(name, path: path, isTarget: isTarget)
                    continue
                }
                resolved.append(name)
                try enter(opened)
            }
        }

        private mutating func enterRoot() throws(Failure) {
            resolved = []
            try enter(open("/", Self.searchOnly | O_DIRECTORY | O_CLOEXEC))
        }

        /// Makes `opened` the current directory and checks it: as the target when nothing is left
        /// to walk, else as a parent.
        private mutating func enter(_ opened: Int32) throws(Failure) {
            let number = errno
            let path = resolvedPath
            guard opened >= 0 else {
                throw failure(path, isParent: !pending.isEmpty, "cannot be opened: \(describeErrno(number))")
            }
            release()
            current = opened
            var info = stat()
            guard fstat(current, &info) == 0 else {
                throw failure(path, isParent: !pending.isEmpty, "cannot be examined: \(describeErrno(errno))")
            }
            if pending.isEmpty {
                try checkTarget(info, path: path)
            } else {
                try checkParent(info, path: path)
            }
        }

        /// `name` in the current directory is not a directory: a link is followed when it is a
        /// parent and belongs to us or root; anything else is refused.
        private mutating func followLink(_ name: String, path: String, isTarget: Bool) throws(Failure) {
            var info = stat()
            guard fstatat(current, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
                throw failure(path, isParent: !isTarget, "cannot be examined: \(describeErrno(errno))")
            }
            guard (info.st_mode & S_IFMT) == S_IFLNK else {
                throw failure(path, isParent: !isTarget, "is not a directory")
            }
            guard !isTarget else {
                throw failure(path, isParent: false,
                              "is a symbolic link; Postern uses only a real directory there (give the directory the link leads to)")
            }
            guard info.st_uid == geteuid() || info.st_uid == 0 else {
                throw failure(path, isParent: true,
                              "is a symbolic link made by another user (uid \(info.st_uid)), who chose where it leads")
            }
            linksFollowed += 1
            guard linksFollowed <= PrivateDirectory.maximumLinks else {
                throw failure(path, isParent: true, "leads through more than \(PrivateDirectory.maximumLinks) symbolic links (a loop?)")
            }
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let length = readlinkat(current, name, &buffer, buffer.count - 1)
            guard length > 0 else {
                throw failure(path, isParent: true, "is a symbolic link that cannot be read: \(describeErrno(errno))")
            }
            let target = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            pending += Self.components(target).reversed()
            if target.hasPrefix("/") { try enterRoot() }
        }

        private func checkParent(_ info: stat, path: String) throws(Failure) {
            guard info.st_uid == geteuid() || info.st_uid == 0 else {
                throw failure(path, isParent: true,
                              "belongs to another user (uid \(info.st_uid)), who could put a directory of their own in place of Postern's")
            }
            // Group write is only another account's when someone else is in the group: Debian's
            // user private groups with umask 002 make ~/.config 0775 for a group of one.
            let groupWriteIsOthers = info.st_mode & 0o020 != 0 && !PrivateDirectory.isOwnPrivateGroup(info.st_gid)
            let writableByOthers = info.st_mode & 0o002 != 0 || groupWriteIsOthers
            let sticky = info.st_mode & S_ISVTX != 0
            guard !writableByOthers || sticky else {
                throw failure(path, isParent: true,
                              "is writable by other users and not sticky (mode 0\(String(info.st_mode & 0o7777, radix: 8))), so another account could put a directory of its own in place of Postern's; remove their write access (chmod go-w) or choose another directory")
            }
        }

        private func checkTarget(_ info: stat, path: String) throws(Failure) {
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw failure(path, isParent: false, "is not a directory")
            }
            guard info.st_uid == geteuid() else {
                throw failure(path, isParent: false,
                              "belongs to another user (uid \(info.st_uid)); Postern keeps its files only in directories of its own user")
            }
            guard info.st_mode & 0o077 != 0 else { return }
            // A search-only descriptor cannot be chmod'ed; "." through it is the same directory,
            // opened for reading (no name is looked up again).
            let readable = openat(current, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            let changed = readable >= 0 && fchmod(readable, 0o700) == 0
            let number = errno
            if readable >= 0 { close(readable) }
            guard changed else {
                throw failure(path, isParent: false, "is open to other users and cannot be made private: \(describeErrno(number))")
            }
        }

        /// `/`-separated names, without empty ones and `.`; `..` is kept (it is resolved against
        /// the directories actually walked, not the text).
        static func components(_ path: String) -> [String] {
            path.split(separator: "/", omittingEmptySubsequences: true).map(String.init).filter { $0 != "." }
        }

        /// O_PATH: the descriptor only locates the directory, so a parent we may search but not
        /// read (a 0711 /home) can be walked. Glibc's Swift module does not export the constant; its
        /// value is the same on every Linux architecture Swift runs on.
        #if os(Linux)
        static let searchOnly: Int32 = 0o10000000
        #else
        static let searchOnly: Int32 = O_RDONLY
        #endif
    }
}

private func describeErrno(_ number: Int32) -> String {
    String(cString: strerror(number))
}
