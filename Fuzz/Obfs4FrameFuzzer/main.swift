// obfs4 data-phase frame decoder. The harness (a little program that builds a stream from
// well-formed frames, sealed malformed packets, garbage and bit flips) is in Fuzz/Obfs4Harnesses/FrameFuzzHarness.swift,
// over the framing types Obfs4Transport offers this package as `package` API.
import FuzzSupport
import Obfs4FuzzHarnesses

runFuzzer(Obfs4FrameFuzzHarness.run)
