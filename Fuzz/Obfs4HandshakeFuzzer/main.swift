// obfs4 client handshake: the server-response parser (mark search, MAC, ntor AUTH) and Elligator2.
// The harness is `package` API next to the internal handshake types:
// Sources/Transports/obfs4/HandshakeFuzzHarness.swift.
import FuzzSupport
import Obfs4Transport

runFuzzer(Obfs4HandshakeFuzzHarness.run)
