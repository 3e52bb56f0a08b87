// What every fuzz target shares: the one way a target hands its check to libFuzzer (or, in a build
// without -sanitize=fuzzer, to the replayer in Fuzz/Entry), a cursor that turns the fuzzer's bytes
// into choices, and the way a broken invariant is reported.
import FuzzerEntry
#if canImport(Glibc)
import Glibc
#endif

/// The target's check, set once by `runFuzzer` before libFuzzer starts calling back. libFuzzer calls
/// from the main thread, one input at a time.
nonisolated(unsafe) private var fuzzBody: ((UnsafeRawBufferPointer) -> Void)?

/// libFuzzer's entry symbol; also what `runFuzzer` passes to the driver.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = data.map { UnsafeRawBufferPointer(start: $0, count: size) } ?? UnsafeRawBufferPointer(start: nil, count: 0)
    fuzzBody?(input)
    return 0
}

/// Runs libFuzzer over `body` (or replays the files named on the command line) and exits.
///
/// With POSTERN_FUZZ_PLANTED_CRASH set, every input also breaks an invariant: that is how
/// scripts/run-tests.sh shows that its fuzz stage fails when a target crashes.
public func runFuzzer(_ body: @escaping (UnsafeRawBufferPointer) -> Void) -> Never {
    if getenv("POSTERN_FUZZ_PLANTED_CRASH") != nil {
        fuzzBody = { input in
            body(input)
            fuzzCheck(false, "planted crash (POSTERN_FUZZ_PLANTED_CRASH is set)")
        }
    } else {
        fuzzBody = body
    }
    exit(postern_fuzzer_main(CommandLine.argc, CommandLine.unsafeArgv) { data, size in
        fuzzerTestOneInput(data, size)
    })
}

/// A broken invariant: traps, so libFuzzer stops and saves the input as `crash-*`.
public func fuzzCheck(_ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
    if !condition { fatalError("invariant broken: \(message())", file: file, line: line) }
}

/// Reads the fuzzer's bytes as a sequence of choices. Past the end every read returns nil.
public struct FuzzInput {
    public let bytes: [UInt8]
    public private(set) var cursor = 0

    public init(_ input: UnsafeRawBufferPointer) { bytes = Array(input) }
    public init(bytes: [UInt8]) { self.bytes = bytes }

    public var isAtEnd: Bool { cursor >= bytes.count }
    public var remaining: ArraySlice<UInt8> { bytes[min(cursor, bytes.count)...] }

    public mutating func byte() -> UInt8? {
        guard cursor < bytes.count else { return nil }
        defer { cursor += 1 }
        return bytes[cursor]
    }

    /// A big-endian 16-bit number.
    public mutating func uint16() -> Int? {
        guard let high = byte(), let low = byte() else { return nil }
        return Int(high) << 8 | Int(low)
    }

    /// Up to `count` bytes (fewer at the end).
    public mutating func take(_ count: Int) -> [UInt8] {
        let end = min(cursor + max(0, count), bytes.count)
        defer { cursor = max(cursor, end) }
        return cursor < end ? Array(bytes[cursor..<end]) : []
    }

    /// A length-prefixed (one byte) chunk.
    public mutating func chunk() -> [UInt8]? {
        guard let count = byte() else { return nil }
        return take(Int(count))
    }

    /// Everything not read yet.
    public mutating func rest() -> [UInt8] {
        defer { cursor = bytes.count }
        return Array(remaining)
    }
}

/// Splits `bytes` into pieces whose sizes come from `sizes` (cycled; 0 means 1), for feeding a
/// streaming decoder the way a socket would.
public func pieces(of bytes: [UInt8], sizes: [UInt8]) -> [ArraySlice<UInt8>] {
    var result: [ArraySlice<UInt8>] = []
    var offset = 0
    var index = 0
    while offset < bytes.count {
        let size = sizes.isEmpty ? bytes.count : max(1, Int(sizes[index % sizes.count]))
        let end = min(bytes.count, offset + size)
        result.append(bytes[offset..<end])
        offset = end
        index += 1
    }
    return result
}
