// libFuzzer target over the obfs4 frame decoder.
//   swift build -c release -Xswiftc -sanitize=fuzzer --product Obfs4FrameFuzzer
//   .build/release/Obfs4FrameFuzzer -runs=1000000 [corpus-dir]
import CFuzzerEntry
import Obfs4Transport
#if canImport(Glibc)
import Glibc
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func obfs4FrameFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    Obfs4FrameFuzzHarness.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

exit(postern_fuzzer_main(CommandLine.argc, CommandLine.unsafeArgv) { data, size in
    obfs4FrameFuzzerTestOneInput(data, size)
})
