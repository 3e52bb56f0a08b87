// obfs4 client session: real server replies (ntor with the bridge's keys, fuzzer-chosen padding and
// read sizes), then the data phase's frame decoder on the bytes after the MAC, with fuzzer-chosen
// frames and one optional flipped bit. Every input pays the client's key agreement, so this target
// is slower than Obfs4ClientHandshakeFuzzer, which fuzzes arbitrary replies.
// The harness, over Obfs4Transport's `package` API: Fuzz/Obfs4Harnesses/ClientHandshakeFuzzHarness.swift.
import FuzzSupport
import Obfs4FuzzHarnesses

runFuzzer(Obfs4ClientHandshakeFuzzHarness.runRealServerSessions)
