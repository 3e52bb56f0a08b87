// The only place that touches tor_api.h. Everything tor-specific in C goes through `checked`, and
// every C handle has exactly one owner whose deinit frees it.
internal import CTor
import Foundation
import Synchronization

/// Runs `body` (a C call) and turns a failure, as judged by `isSuccess`, into a typed error.
@inline(__always)
func checked<T>(_ call: String, _ isSuccess: (T) -> Bool, _ body: () -> T) throws(TorCoreError) -> T {
    let result = body()
    guard isSuccess(result) else {
        throw TorCoreError(.ffiFailure, "\(call) failed")
    }
    return result
}

/// argv for tor_run_main: C strings that must outlive the call, freed when the owner goes away.
final class OwnedArgv {
    let pointers: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
    let count: Int

    init(_ arguments: [String]) {
        count = arguments.count
        pointers = .allocate(capacity: arguments.count + 1)
        for (index, argument) in arguments.enumerated() {
            pointers[index] = strdup(argument)
        }
        pointers[arguments.count] = nil
    }

    deinit {
        for index in 0..<count { free(pointers[index]) }
        pointers.deallocate()
    }
}

/// Owns one `tor_main_configuration_t` and the argv it points into.
final class TorMainConfiguration {
    private let handle: OpaquePointer
    private var argv: OwnedArgv?

    init() throws(TorCoreError) {
        handle = try checked("tor_main_configuration_new", { $0 != nil }) { tor_main_configuration_new() }!
    }

    deinit { tor_main_configuration_free(handle) }

    func setCommandLine(_ arguments: [String]) throws(TorCoreError) {
        let owned = OwnedArgv(arguments)
        _ = try checked("tor_main_configuration_set_command_line", { $0 == 0 }) {
            tor_main_configuration_set_command_line(handle, Int32(owned.count), owned.pointers)
        }
        argv = owned
    }

    /// The owning control socket: pre-authenticated, and closing it makes tor exit.
    func setUpControlSocket() throws(TorCoreError) -> Int32 {
        try checked("tor_main_configuration_setup_control_socket", { $0 >= 0 }) {
            tor_main_configuration_setup_control_socket(handle)
        }
    }

    /// Blocks until tor exits. Must run on its own thread.
    func runMain() -> Int32 { tor_run_main(handle) }
}

/// Hands the configuration to the tor thread, which alone touches it from then on.
private final class ConfigurationBox: @unchecked Sendable {
    private var configuration: TorMainConfiguration?

    init(_ configuration: TorMainConfiguration) { self.configuration = configuration }

    func runAndFree() -> Int32 {
        let code = configuration?.runMain() ?? -1
        configuration = nil
        return code
    }
}

/// Process-wide guard: tor_api runs at most one tor per process at a time.
enum EmbeddedTorSlot {
    private static let occupied = Mutex(false)

    static func claim() throws(TorCoreError) {
        let claimed = occupied.withLock { isOccupied -> Bool in
            if isOccupied { return false }
            isOccupied = true
            return true
        }
        guard claimed else {
            throw TorCoreError(.alreadyRunning, kind: .usage,
                               "a tor core is already running in this process (tor_api allows one at a time)")
        }
    }

    static func release() { occupied.withLock { $0 = false } }
}

/// A tor main loop running on a dedicated thread.
final class EmbeddedTorThread: Sendable {
    /// The version string of the linked core, e.g. "tor 0.4.9.11".
    static var providerVersion: String { String(cString: tor_api_get_provider_version()) }

    let controlSocket: Int32
    private let exitCode = OneShot<Int32>()

    /// Configures tor with `arguments` (argv[0] included) and starts `tor_run_main` on a new thread.
    /// The caller must already hold the `EmbeddedTorSlot`; it is released when tor returns.
    init(arguments: [String]) throws(TorCoreError) {
        // tor ignores SIGPIPE in its own signal setup, which __DisableSignalHandlers turns off; a
        // write to a closed socket (ours or one of tor's) must not kill the host process.
        signal(SIGPIPE, SIG_IGN)
        let configuration = try TorMainConfiguration()
        try configuration.setCommandLine(arguments)
        controlSocket = try configuration.setUpControlSocket()
        // The configuration (and argv) is owned by the tor thread and freed there as soon as
        // tor_run_main returns, before anyone is told that tor exited.
        let box = ConfigurationBox(configuration)
        let exitCode = self.exitCode
        let thread = Thread {
            let code = box.runAndFree()
            EmbeddedTorSlot.release()
            exitCode.fulfil(code)
        }
        thread.name = "tor-main"
        thread.stackSize = 8 << 20
        thread.start()
    }

    var hasExited: Bool { exitCode.value != nil }

    /// Waits for tor_run_main to return and gives its exit code.
    func waitForExit() async -> Int32 { await exitCode.wait() }
}
