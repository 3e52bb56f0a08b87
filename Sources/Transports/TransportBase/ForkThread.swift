#if canImport(Glibc)
internal import CSpawn
import Glibc
#endif
import Foundation
import PosternSystem
import Synchronization

/// The thread every plugin is forked from. It never ends: `PR_SET_PDEATHSIG` fires when the
/// *thread* that forked the child exits, so forking from a pool thread that the runtime may retire
/// would kill a healthy plugin.
final class ForkThread: @unchecked Sendable {
    static let shared = ForkThread()

    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []

    private init() {
        let thread = Thread { [self] in
            while true {
                condition.lock()
                while jobs.isEmpty { condition.wait() }
                let job = jobs.removeFirst()
                condition.unlock()
                job()
            }
        }
        thread.name = "postern-plugin-fork"
        thread.start()
    }

    struct Child: Sendable {
        let pid: Int32
        let stdinDescriptor: Int32
        let stdoutDescriptor: Int32
        /// Set when exec failed in the child.
        let execErrno: Int32?
    }

    func spawn(executable: String, arguments: [String], environment: [String]) async throws -> Child {
        try await withCheckedThrowingContinuation { continuation in
            condition.lock()
            jobs.append {
                continuation.resume(with: Result { try Self.forkAndExec(executable: executable, arguments: arguments, environment: environment) })
            }
            condition.signal()
            condition.unlock()
        }
    }

    private static func pipeDescriptors() throws -> (read: Int32, write: Int32) {
        var descriptors: [Int32] = [-1, -1]
        guard cspawn_pipe_cloexec(&descriptors) == 0 else {
            throw TransportError(code: .pluginFailed, kind: .internal, message: "cannot create a pipe: \(String(cString: strerror(errno)))")
        }
        return (descriptors[0], descriptors[1])
    }

    private static func forkAndExec(executable: String, arguments: [String], environment: [String]) throws -> Child {
        let input = try pipeDescriptors()
        let output = try pipeDescriptors()
        let report = try pipeDescriptors()
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer {
            Glibc.close(input.read)
            Glibc.close(output.write)
            Glibc.close(report.read)
            if null >= 0 { Glibc.close(null) }
        }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        let pid = argv.withUnsafeBufferPointer { argvBuffer in
            envp.withUnsafeBufferPointer { envpBuffer in
                cspawn_managed_child(executable, argvBuffer.baseAddress, envpBuffer.baseAddress, input.read, output.write,
                                     null >= 0 ? null : output.write, report.write, getpid())
            }
        }
        Glibc.close(report.write)
        guard pid > 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(input.write)
            Glibc.close(output.read)
            throw TransportError(code: .pluginFailed, kind: .internal, message: "cannot fork: \(reason)")
        }
        // exec closes the report pipe (EOF, nothing written) or the child writes its errno first.
        var code: Int32 = 0
        let received = (try? SystemCall.retrying("read") {
            withUnsafeMutableBytes(of: &code) { Glibc.read(report.read, $0.baseAddress, $0.count) }
        }) ?? 0
        return Child(pid: pid, stdinDescriptor: input.write, stdoutDescriptor: output.read,
                     execErrno: received == MemoryLayout<Int32>.size ? code : nil)
    }
}
