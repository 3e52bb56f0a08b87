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

    private struct ExitState {
        var code: Int32?
        var waiters: [CheckedContinuation<Int32, Never>] = []
    }

    /// Shared between this object and the tor thread, which outlives neither.
    private final class ExitBox: Sendable {
        let state = Mutex(ExitState())
    }

    let controlSocket: Int32
    private let exit = ExitBox()

    /// Configures tor with `arguments` (argv[0] included) and starts `tor_run_main` on a new thread.
    /// The caller must already hold the `EmbeddedTorSlot`; it is released when tor returns.
    init(arguments: [String]) throws(TorCoreError) {
        let configuration = try TorMainConfiguration()
        try configuration.setCommandLine(arguments)
        controlSocket = try configuration.setUpControlSocket()
        // The configuration (and argv) is owned by the thread until tor_run_main returns.
        nonisolated(unsafe) let ownedConfiguration = configuration
        let exit = self.exit
        let thread = Thread {
            let code = ownedConfiguration.runMain()
            EmbeddedTorSlot.release()
            let waiters = exit.state.withLock { state -> [CheckedContinuation<Int32, Never>] in
                state.code = code
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(returning: code) }
        }
        thread.name = "tor-main"
        thread.stackSize = 8 << 20
        thread.start()
    }

    var hasExited: Bool { exit.state.withLock { $0.code != nil } }

    /// Waits for tor_run_main to return and gives its exit code.
    func waitForExit() async -> Int32 {
        await withCheckedContinuation { continuation in
            let code = exit.state.withLock { state -> Int32? in
                if let code = state.code { return code }
                state.waiters.append(continuation)
                return nil
            }
            if let code { continuation.resume(returning: code) }
        }
    }
}
