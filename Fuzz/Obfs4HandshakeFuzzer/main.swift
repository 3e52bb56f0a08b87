// obfs4 client handshake: the server-response parser (mark search, MAC, ntor AUTH) and Elligator2.
// The harness is `package` API next to the internal handshake types:
// Sources/Transports/Obfs4Transport/HandshakeFuzzHarness.swift.
import FuzzSupport
import Obfs4Transport

runFuzzer(Obfs4HandshakeFuzzHarness.run)
