import BridgeConfig
import Foundation
import PosternLinkSpec
import Synchronization

extension BootstrapCheck {
    /// Bootstraps through bridges one at a time or in parallel (`postern bridges test --bootstrap`),
    /// each child in a directory of its own inside one temporary work directory, which goes when
    /// the batch does: no child's bridge lines or tor data outlive the check.
    public final class Batch: Sendable {
        /// The work directory, in the system's temporary directory; created by the first run.
        public let directory: URL
        private let plugins: [TransportPlugin]
        private let timeout: Duration
        private let torOptionsFile: String?
        private let unsafeLogging: Bool
        private let executable: URL
        private let started = Mutex(0)

        /// Each bootstrap gets `timeout`, the plugins that serve its transport and the extra tor
        /// options in `torOptionsFile`; the children are `executable` (the running `postern`).
        public init(plugins: [TransportPlugin], timeout: Duration, torOptionsFile: String?, unsafeLogging: Bool,
                    executable: URL = ChildRun.currentExecutable) {
            directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("postern-bridges-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
            self.plugins = plugins
            self.timeout = timeout
            self.torOptionsFile = torOptionsFile
            self.unsafeLogging = unsafeLogging
            self.executable = executable
        }

        /// One bootstrap through `line` alone. Children are numbered, not named after anything
        /// the caller passes, so no name can lead a directory elsewhere.
        public func run(through line: BridgeLine) async -> BootstrapCheck {
            // A cancelled batch (the user interrupted) starts no more children.
            guard !Task.isCancelled else {
                return BootstrapCheck(succeeded: false, milliseconds: nil, detail: "not run: the check was stopped")
            }
            let number = started.withLock { count in
                count += 1
                return count
            }
            return await BootstrapCheck.run(through: line, directory: directory.appendingPathComponent("bridge-\(number)"),
                                            plugins: plugins, timeout: timeout, torOptionsFile: torOptionsFile,
                                            unsafeLogging: unsafeLogging, executable: executable)
        }

        deinit { try? FileManager.default.removeItem(at: directory) }
    }
}
