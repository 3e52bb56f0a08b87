// obfs4 client handshake as a state machine: the reader that accumulates the server's reply read by
// read (what Obfs4Transport runs on the socket), then the data phase's frame decoder on the bytes
// that followed the MAC. Arbitrary replies in arbitrary reads, and real server replies (ntor with
// the bridge's keys, fuzzer-chosen padding, frames and one optional flipped bit).
// The harness is `package` API next to the internal types: Sources/Transports/obfs4/ClientHandshakeFuzzHarness.swift.
import FuzzSupport
import Obfs4Transport

runFuzzer(Obfs4ClientHandshakeFuzzHarness.run)
