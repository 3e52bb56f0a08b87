import Foundation
import PosternSystem
import Synchronization

/// The CLI owns all output. Lines are written whole so that concurrent tasks cannot interleave.
final class Output: Sendable {
    private let lock = Mutex(())
    let isTerminal: Bool
    let errorIsTerminal: Bool

    init() {
        isTerminal = isatty(STDOUT_FILENO) == 1
        errorIsTerminal = isatty(STDERR_FILENO) == 1
    }

    func print(_ text: String, terminator: String = "\n") {
        write(text + terminator, to: STDOUT_FILENO)
    }

    func error(_ text: String) {
        write(text + "\n", to: STDERR_FILENO)
    }

    /// Rewrites the current terminal line (progress); on a non-terminal prints a normal line.
    func status(_ text: String) {
        if isTerminal {
            write("\r\u{1B}[2K" + text, to: STDOUT_FILENO)
        } else {
            print(text)
        }
    }

    /// Ends a status line so the next output starts on a fresh line.
    func endStatus() {
        if isTerminal { write("\n", to: STDOUT_FILENO) }
    }

    /// Rewrites the current line of standard error (a live view that leaves stdout to results);
    /// nothing when standard error is not a terminal.
    func progress(_ text: String) {
        if errorIsTerminal { write("\r\u{1B}[2K" + text, to: STDERR_FILENO) }
    }

    /// Clears the live view's line.
    func endProgress() {
        if errorIsTerminal { write("\r\u{1B}[2K", to: STDERR_FILENO) }
    }

    /// Pretty, sorted keys, dates as ISO 8601 (the form `ABResult.encoder()` writes saved runs in).
    func json(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    private func write(_ text: String, to descriptor: Int32) {
        lock.withLock { _ in
            // A closed or full output loses the text; the command's exit status still says how it went.
            try? SystemCall.writeAll(descriptor, text.utf8)
        }
    }
}
