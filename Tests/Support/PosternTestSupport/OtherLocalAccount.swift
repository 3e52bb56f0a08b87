import Foundation

/// A second local account (`postern-other`), for tests of what another user on the machine can do
/// to a session: listen on a port we left, connect to our loopback listeners. Created on first use
/// (idempotent; needs root, as the test suite runs in CI); its processes are started through
/// `setpriv`, which execs, so the pid a test sees is the process's own.
public struct OtherLocalAccount: Sendable {
    public static let name = "postern-other"
    public let uid: UInt32
    public let gid: UInt32

    /// Whether this process may create the account and switch to it.
    public static var isAvailable: Bool { geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") }

    private static let creation = NSLock()

    public static func ensure() throws -> OtherLocalAccount {
        try creation.withLock {
            if let account = lookUp() { return account }
            // A system account without a home or a login shell; "already exists" (9) from a
            // concurrent test process is fine, the lookup below decides.
            _ = try ProcessRunner.runBlocking(URL(fileURLWithPath: "/usr/sbin/useradd"),
                                              ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name])
            guard let account = lookUp() else { throw PeerProcess.PeerError(message: "cannot create the account \(name)") }
            return account
        }
    }

    private static func lookUp() -> OtherLocalAccount? {
        guard let entry = getpwnam(name) else { return nil }
        return OtherLocalAccount(uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
    }

    /// `setpriv`'s arguments that run `command` as this account, with no supplementary groups.
    public func commandLine(_ command: [String]) -> [String] {
        ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--"] + command
    }
}
