// obfs4 data-phase frame decoder. The harness (a little program that builds a stream from
// well-formed frames, sealed malformed packets, garbage and bit flips) lives next to the decoder as
// `package` API, because the framing types are internal: Sources/Transports/Obfs4Transport/FrameFuzzHarness.swift.
import FuzzSupport
import Obfs4Transport

runFuzzer(Obfs4FrameFuzzHarness.run)
