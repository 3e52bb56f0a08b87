// obfs4 client handshake as a state machine: the reader that accumulates the server's reply read by
// read (what Obfs4Transport runs on the socket), fed arbitrary replies in arbitrary reads. Real
// server replies into the data phase: Fuzz/Obfs4ClientSessionFuzzer.
// The harness, over Obfs4Transport's `package` API: Fuzz/Obfs4Harnesses/ClientHandshakeFuzzHarness.swift.
import FuzzSupport
import Obfs4FuzzHarnesses

runFuzzer(Obfs4ClientHandshakeFuzzHarness.runArbitraryReplies)
