import BridgeConfig
import Foundation
import PosternLinkSpec
import Synchronization

extension DeepCheck {
    /// Deep checks of many bridges (`postern bridges test --deep`), each child in a directory of
    /// its own inside one temporary work directory, which goes when the batch does: no child's
    /// bridge lines or tor data outlive the check.
    public final class Batch: Sendable {
        /// The work directory, in the system's temporary directory; created by the first run.
        public let directory: URL
        private let plugins: [TransportPlugin]
        private let timeout: Duration
        private let download: ProbeFetch.Target?
        private let maximumBytes: Int
        private let torOptionsFile: String?
        private let unsafeLogging: Bool
        private let executable: URL
        private let started = Mutex(0)

        /// Each check gets `timeout` as a whole (bootstrap and download), downloads up to
        /// `maximumBytes` of `download` when given, and runs `executable` (the running `postern`).
        public init(plugins: [TransportPlugin], timeout: Duration, download: ProbeFetch.Target?, maximumBytes: Int,
                    torOptionsFile: String?, unsafeLogging: Bool, executable: URL = ChildRun.currentExecutable) {
            directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("postern-bridges-deep-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
            self.plugins = plugins
            self.timeout = timeout
            self.download = download
            self.maximumBytes = maximumBytes
            self.torOptionsFile = torOptionsFile
            self.unsafeLogging = unsafeLogging
            self.executable = executable
        }

        /// One deep check through `line` alone. Children are numbered, never named after anything
        /// the caller passes.
        public func run(through line: BridgeLine) async -> DeepCheck {
            guard !Task.isCancelled else {
                return DeepCheck(verdict: .failed, detail: "not run: the check was stopped", milliseconds: 0)
            }
            let number = started.withLock { count in
                count += 1
                return count
            }
            return await DeepCheck.run(through: line, directory: directory.appendingPathComponent("bridge-\(number)"),
                                       plugins: plugins, timeout: timeout, download: download, maximumBytes: maximumBytes,
                                       torOptionsFile: torOptionsFile, unsafeLogging: unsafeLogging, executable: executable)
        }

        deinit { try? FileManager.default.removeItem(at: directory) }
    }
}
