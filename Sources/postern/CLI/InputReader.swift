import Foundation
import PosternSystem

/// Reads the text a command was pointed at: `-` for standard input, otherwise a file path.
/// Failures are `CommandFailure`s that name the source and the system's reason.
enum InputReader {
    /// A secret given as a command-line argument sits in /proc/PID/cmdline (readable by every
    /// local user for as long as the process runs) and in shell history. It still works; this
    /// says so on standard error and names the way that does not leak.
    static func warnSecretOnCommandLine(_ what: String, instead: String, output: Output) {
        output.error("postern: warning: \(what) on the command line can be read by every local user (ps, /proc/PID/cmdline) and stays in shell history; use \(instead) instead")
    }

    /// A paste is a few KiB; refuse anything absurd rather than filling memory.
    static let maximumSize = 4 << 20

    struct Input: Sendable {
        /// "standard input" or the path as given.
        let name: String
        let text: String
    }

    static func read(_ source: String, output: Output) throws(CommandFailure) -> Input {
        if source == "-" {
            if isatty(STDIN_FILENO) == 1 {
                output.error("Reading from standard input: paste, then press Ctrl-D on a new line.")
            }
            return Input(name: "standard input", text: try readAll(descriptor: STDIN_FILENO, name: "standard input"))
        }
        let descriptor = open(source, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw CommandFailure("cannot read \(source): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var info = stat()
        if fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            throw CommandFailure("cannot read \(source): it is a directory")
        }
        return Input(name: source, text: try readAll(descriptor: descriptor, name: source))
    }

    private static func readAll(descriptor: Int32, name: String) throws(CommandFailure) -> String {
        let bytes: [UInt8]
        do throws(SystemCallError) {
            bytes = try SystemCall.readAll(descriptor, maximumCount: maximumSize)
        } catch {
            throw CommandFailure("cannot read \(name): \(error.reason)")
        }
        if bytes.count > maximumSize {
            throw CommandFailure("cannot read \(name): it is larger than \(maximumSize / (1 << 20)) MiB, which is not a list of bridges")
        }
        // Invalid UTF-8 becomes U+FFFD, which the paste parser rejects per line with a reason.
        return String(decoding: bytes, as: UTF8.self)
    }
}
