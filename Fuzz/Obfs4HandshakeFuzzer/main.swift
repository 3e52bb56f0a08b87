// obfs4 client handshake: the server-response parser (mark search, MAC, ntor AUTH) and Elligator2.
// The harness, over the handshake types Obfs4Transport offers this package as `package` API:
// Fuzz/Obfs4Harnesses/HandshakeFuzzHarness.swift.
import FuzzSupport
import Obfs4FuzzHarnesses

runFuzzer(Obfs4HandshakeFuzzHarness.run)
