// obfs4 client handshake as a state machine: the reader that accumulates the server's reply read by
// read (what Obfs4Transport runs on the socket), fed arbitrary replies in arbitrary reads. Real
// server replies into the data phase: Fuzz/Obfs4ClientSessionFuzzer.
// The harness is `package` API next to the internal types: Sources/Transports/Obfs4Transport/ClientHandshakeFuzzHarness.swift.
import FuzzSupport
import Obfs4Transport

runFuzzer(Obfs4ClientHandshakeFuzzHarness.runArbitraryReplies)
