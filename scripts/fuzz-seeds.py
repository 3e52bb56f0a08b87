#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target into OUT/<Target>/, from the unit tests' vectors.

Seeds come from the same material the unit tests check against: the bridge-paste golden corpus
(Tests/BridgeConfigTests/Corpus), the snowflake wire vectors captured from the Go implementation
(Tests/SnowflakeTests/Vectors/snowflake-go.json), and the literal inputs of the control-reply,
geo CSV, WebSocket, Nostr, SOCKS and obfs4 tests. Targets whose input is a little program (a mode
byte, then choices) get their mode byte in front. Inputs that once broke a target (Fuzz/Regressions/<Target>/, each also a unit test)
are seeds too, so every run replays them first. Usage: fuzz-seeds.py OUT
"""
import glob
import json
import os
import shutil
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
out = sys.argv[1]
vectors = json.load(open(os.path.join(root, "Tests/SnowflakeTests/Vectors/snowflake-go.json")))


def seed(target, name, data):
    os.makedirs(os.path.join(out, target), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(out, target, name), "wb") as f:
        f.write(bytes(data))


for path in glob.glob(os.path.join(root, "Fuzz/Regressions/*/*")):
    target = os.path.basename(os.path.dirname(path))
    os.makedirs(os.path.join(out, target), exist_ok=True)
    shutil.copy(path, os.path.join(out, target, "regression-" + os.path.basename(path)))

for path in glob.glob(os.path.join(root, "Tests/BridgeConfigTests/Corpus/*.txt")):
    os.makedirs(os.path.join(out, "BridgeParserFuzzer"), exist_ok=True)
    shutil.copy(path, os.path.join(out, "BridgeParserFuzzer", os.path.basename(path)))

# Control replies (ControlReplyParserTests).
seed("ControlReplyFuzzer", "ok", "250 OK\r\n")
seed("ControlReplyFuzzer", "getinfo-data", "250-version=0.4.9.11\r\n250+config-text=\r\nSocksPort 127.0.0.1:39050\r\n..leading dot is unstuffed\r\n.\r\n250 OK\r\n")
seed("ControlReplyFuzzer", "bootstrap-event", '650 STATUS_CLIENT NOTICE BOOTSTRAP PROGRESS=5 TAG=conn SUMMARY="Connecting to a relay"\r\n250 OK\r\n')
seed("ControlReplyFuzzer", "warning", '650 STATUS_CLIENT WARN BOOTSTRAP PROGRESS=10 TAG=conn_done SUMMARY="Connected to a relay" WARNING="Connection refused" REASON=CONNECTREFUSED COUNT=3 RECOMMENDATION=ignore\r\n')
seed("ControlReplyFuzzer", "error", "552 Unrecognized option: Unknown option 'Bogus'.  Failing.\r\n")
seed("ControlReplyFuzzer", "mixed-status", "250-first\r\n550 second\r\n250 OK\r\n")

# PT SOCKS (SocksServerTests): mode 0 = raw client bytes (first a piece-size chunk), mode 1 = built.
args = b"cert=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA;iat-mode=0"
seed("PTSocksFuzzer", "raw-auth", bytes([0, 1, 3]) + bytes([5, 1, 2, 1, len(args)]) + args + bytes([1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 0x1f, 0x90]) + b"early")
seed("PTSocksFuzzer", "raw-noauth", bytes([0, 0, 5, 1, 0, 5, 1, 0, 4]) + bytes(15) + bytes([1, 1, 187]))
seed("PTSocksFuzzer", "raw-domain", bytes([0, 0, 5, 1, 0, 5, 1, 0, 3, 9]) + b"localhost" + bytes([0, 80]))
seed("PTSocksFuzzer", "built", bytes([1, 2, 4]) + b"cert" + bytes([8]) + b"AAAA\\;==" + bytes([8]) + b"iat-mode" + bytes([1]) + b"0" + bytes([0, 127, 0, 0, 1, 0x1f, 0x90, 3]) + b"abc" + bytes([1, 2, 3]))

# obfs4: frame harness (chunk selector, then operations) and handshake harness (mode, then fields).
seed("Obfs4FrameFuzzer", "frames", bytes([3, 0, 0, 0, 5, 2]) + b"hello" + bytes([1, 0, 4, 0, 0, 1, 9, 0, 1, 2]))
seed("Obfs4FrameFuzzer", "garbage", bytes([0, 2, 8]) + b"garbage!")
for mode, name in [(0, "arbitrary"), (1, "signed"), (2, "real"), (3, "elligator")]:
    seed("Obfs4HandshakeFuzzer", name, bytes([mode, 0, 40, 7]) + bytes(range(64)) + b"trailing frame bytes")

# Snowflake, from the Go vectors.
for index, chunk in enumerate(vectors["encapsulation"]):
    seed("SnowflakeEncapsulationFuzzer", f"chunk-{index}", bytes([0x80, 0]) + bytes.fromhex(chunk.get("encodedHex", chunk["prefixHex"])))
seed("SnowflakeEncapsulationFuzzer", "stream", bytes([0x80, 2, 7, 3]) + bytes.fromhex(vectors["encapsulationStream"]["hex"]))
seed("SnowflakeEncapsulationFuzzer", "built", bytes([0x81, 1, 5, 0, 5]) + b"hello" + bytes([3, 2, 1]))
for index, packet in enumerate(vectors["kcp"]["packets"][:12]):
    seed("KCPFuzzer", f"packet-{index}", bytes([0]) + bytes.fromhex(packet["hex"]))
seed("KCPFuzzer", "built", bytes([1, 0, 1, 0]) + bytes(14) + bytes([5]) + b"hello" + bytes([1]) + bytes(14) + bytes([0]))
seed("SmuxFuzzer", "session", bytes([0, 1, 5]) + b"".join(bytes.fromhex(w["hex"]) for w in vectors["smux"]["writes"]))
for index, write in enumerate(vectors["smux"]["writes"]):
    seed("SmuxFuzzer", f"frame-{index}", bytes([0, 0]) + bytes.fromhex(write["hex"]))
for index, response in enumerate(vectors["pollResponses"]):
    seed("BrokerResponseFuzzer", f"poll-{index}", bytes([0]) + response["encoded"].encode())
seed("BrokerResponseFuzzer", "amp-armor", bytes([1, 76]) + vectors["ampArmor"]["encoded"].encode())
seed("BrokerResponseFuzzer", "amp-path", bytes([2]) + vectors["ampPath"]["data"].encode())
# Stateful snowflake targets, seeded with the attacks of issue #12 (Fuzz/README.md).
def kcp_forge(cmd, age=0, sn=0, una=0, wnd=65535, length=0, sn_mode=0, fill=0x41):
    return bytes([1, cmd, fill, 0, wnd >> 8, wnd & 0xff]) + age.to_bytes(4, "big") + sn.to_bytes(4, "big") \
        + una.to_bytes(4, "big") + bytes([sn_mode, length])
def kcp_tick(step=1, drops=0):
    return bytes([0, step, drops])
def kcp_jump(ms, drops=0):
    return bytes([0, 0xFF]) + (ms >> 16).to_bytes(2, "big") + (ms & 0xffff).to_bytes(2, "big") + bytes([drops])
seed("KCPControlBlockFuzzer", "forged-ack-2e9", bytes([0x77, 0x40]) + kcp_forge(1, age=2_000_000_000) + kcp_tick())
seed("KCPControlBlockFuzzer", "honest", bytes([0, 0, 4, 200, 4, 201]) + kcp_tick() * 12)
seed("KCPControlBlockFuzzer", "lossy-replay", bytes([0, 1, 4, 250, 4, 99]) + (kcp_tick(3, 0x5a) + bytes([2, 0])) * 8 + kcp_tick(30) * 4)
seed("KCPControlBlockFuzzer", "backoff-at-max-rto", bytes([0, 2, 4, 3]) + kcp_tick() + kcp_forge(1, age=60_000) + bytes([4, 5])
     + kcp_jump(60_001, 0xff) * 24)
seed("KCPControlBlockFuzzer", "out-of-window-flood", bytes([0, 3, 4, 100])
     + b"".join(kcp_forge(0, sn=sn, length=40) for sn in [1, 2047, 2048, 65534, 0x80000000, 0xFFFFFFFF, 5, 5]) + kcp_tick())
seed("KCPControlBlockFuzzer", "forged-una-and-window", bytes([0, 4, 4, 11, 4, 100]) + kcp_tick()
     + kcp_forge(1, sn=0xFFFFFFF0, una=0x7FFFFFFF, wnd=0) + kcp_forge(2, wnd=0) + kcp_jump(0x80000000) + kcp_tick(200))
seed("KCPControlBlockFuzzer", "raw", bytes([0, 5, 3, 30]) + bytes.fromhex(vectors["kcp"]["packets"][0]["hex"])[:30] + kcp_tick())

def smux_frame(cmd, stream=3, fill=0x41, length4=0):
    return bytes([1, cmd, stream, fill, length4])
# sizes chunk, window byte (× 64 + 64), operations
seed("SmuxSessionFuzzer", "honest", bytes([2, 1, 7, 15]) + smux_frame(2, length4=40) + bytes([2, 10, 4, 10, 3, 4, 4, 10])
     + smux_frame(4) + bytes(8) + smux_frame(1))
seed("SmuxSessionFuzzer", "window-overrun", bytes([0, 1]) + smux_frame(2, length4=32) * 2)
seed("SmuxSessionFuzzer", "slow-reader", bytes([0, 3]) + (smux_frame(2, length4=50) + bytes([2, 20])) * 8)
seed("SmuxSessionFuzzer", "unknown-streams", bytes([0, 4]) + smux_frame(2, stream=4, length4=30) + smux_frame(0, stream=8)
     + smux_frame(1, stream=0) + smux_frame(2, length4=10))
seed("SmuxSessionFuzzer", "update-lies", bytes([0, 4]) + bytes([3, 255, 4, 1]) + smux_frame(4) + b"\xff" * 8 + bytes([4, 1])
     + smux_frame(4) + bytes([0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]) + bytes([4, 1]))
seed("SmuxSessionFuzzer", "oversized-length", bytes([0, 4, 0, 12, 2, 2, 0xff, 0xff, 3, 0, 0, 0, 1, 2, 3, 4]))
for index, write in enumerate(vectors["smux"]["writes"][:4]):
    data = bytes.fromhex(write["hex"])[:255]
    seed("SmuxSessionFuzzer", f"go-{index}", bytes([0, 255, 0, len(data)]) + data)

# mode (bit 0: built; body limit = mode >> 1 × 8), shape (head cap, header count, chunk-line cap, trailer cap)
def http_raw(text, limit8=32, shape=0xAF, sizes=b"\x01\x07"):
    return bytes([limit8 << 1, shape, len(sizes)]) + sizes + (text.encode() if isinstance(text, str) else text)
chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
seed("BrokerHTTPResponseFuzzer", "chunk-size-overflow", http_raw(chunked + "1\r\na\r\n7fffffffffffffff\r\n"))
seed("BrokerHTTPResponseFuzzer", "chunk-size-2-64", http_raw(chunked + "10000000000000000\r\n"))
seed("BrokerHTTPResponseFuzzer", "chunk-negative", http_raw(chunked + "-1\r\n"))
seed("BrokerHTTPResponseFuzzer", "chunked-valid", http_raw(chunked + "3;x=1\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"))
seed("BrokerHTTPResponseFuzzer", "content-length-100mb", http_raw("HTTP/1.1 200 OK\r\nContent-Length: 104857600\r\n\r\nabc"))
seed("BrokerHTTPResponseFuzzer", "content-length-valid", http_raw("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"))
seed("BrokerHTTPResponseFuzzer", "until-eof", http_raw("HTTP/1.0 404 Not Found\r\nLocation: x\r\n\r\n" + "x" * 300))
seed("BrokerHTTPResponseFuzzer", "endless-headers", http_raw("HTTP/1.1 200 OK\r\n" + "X-A: b\r\n" * 40 + "\r\n"))
seed("BrokerHTTPResponseFuzzer", "long-head", http_raw("HTTP/1.1 200 OK\r\nX: " + "a" * 600, shape=0x3F))
seed("BrokerHTTPResponseFuzzer", "bad-status", http_raw("HTTP/1.1 99999999999999999999999 OK\r\n\r\n"))
seed("BrokerHTTPResponseFuzzer", "built-chunked", bytes([0x41, 0xAF, 200, 16 | 8, 20]) + bytes(range(20)) + bytes([2, 3, 1]))
seed("BrokerHTTPResponseFuzzer", "built-length", bytes([0x41, 0xAF, 100, 1, 5]) + b"hello" + bytes([1, 2]))
seed("BrokerHTTPResponseFuzzer", "interim-and-trailer", http_raw("HTTP/1.1 100 Continue\r\n\r\n" + chunked + "3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n"))
seed("BrokerHTTPResponseFuzzer", "built-interim-trailer", bytes([0x41, 0xAF, 0, 96, 5]) + b"hello" + bytes([1, 2]))

seed("SDPFuzzer", "pion-offer", bytes([1]) + json.loads(vectors["pionOfferSerialized"])["sdp"].encode())
seed("SDPFuzzer", "offer", bytes([1]) + vectors["sessionDescription"]["sdp"].encode())
seed("SDPFuzzer", "candidate", bytes([0]) + b"1 1 udp 2130706431 127.0.5.2 40000 typ srflx raddr 0.0.0.0 rport 40000")
seed("SDPFuzzer", "built", bytes([2, 4]) + b"ufrg" + bytes([22]) + bytes(range(22)) + bytes(range(32)) + bytes([0x81]) + bytes(range(9)))

# Geo relay CSV (GeoRelayDirectoryTests).
seed("GeoRelayCSVFuzzer", "sample", "Relay URL,Latitude,Longitude\nrelay.example.org,48.85,2.35\nwss://nostr.example.net,40.71,-74.0\nhttps://tokyo.example.jp/,35.68,139.69\n\n")
seed("GeoRelayCSVFuzzer", "short-header", "relay url,lat,lon\r\nrelay.example.org:8443,-90,180\r\n")
seed("GeoRelayCSVFuzzer", "local", "Relay URL,Latitude,Longitude\nwss://relay.local,1,2\n")

# WebSocket server frames (WebSocketTests): mode 0 raw (after a piece-size chunk), mode 1 built.
seed("WebSocketFrameFuzzer", "text", bytes([0x80, 0, 0x81, 5]) + b"hello")
seed("WebSocketFrameFuzzer", "fragmented", bytes([0x80, 1, 3, 0x01, 3]) + b"hel" + bytes([0x89, 1, 0x2a, 0x80, 2]) + b"lo" + bytes([0x88, 2, 0x03, 0xe8]))
seed("WebSocketFrameFuzzer", "long", bytes([0x80, 0, 0x82, 126, 0x01, 0x00]) + bytes(256))
seed("WebSocketFrameFuzzer", "built", bytes([0x81, 1, 7, 0x44, 0, 10]) + b"0123456789" + bytes([2, 3, 0x03, 0xe8]))

# Nostr relay messages (NostrTests): mode 0 raw text, mode 1 a signed event built by the harness.
seed("NostrMessageFuzzer", "eose", bytes([0]) + b'["EOSE","sub1"]')
seed("NostrMessageFuzzer", "ok", bytes([0]) + b'["OK","' + b"ab" * 32 + b'",true,"duplicate: already have it"]')
seed("NostrMessageFuzzer", "notice", bytes([0]) + b'["NOTICE","rate limited"]')
seed("NostrMessageFuzzer", "closed", bytes([0]) + b'["CLOSED","sub1","auth-required: log in"]')
seed("NostrMessageFuzzer", "event", bytes([0]) + b'["EVENT","sub1",{"id":"' + b"00" * 32 + b'","pubkey":"' + b"11" * 32 + b'","created_at":1700000000,"kind":1,"tags":[["t","x"]],"content":"hi","sig":"' + b"22" * 64 + b'"}]')
seed("NostrMessageFuzzer", "signed", bytes([1, 0, 1, 0x65, 0x53, 0xf1, 0x00, 1, 2, 1]) + b"t" + bytes([1]) + b"x" + bytes([4]) + b"sub1" + "line\nquote\" back\\slash tab\t é / 🙂".encode())

# webtunnel's upgrade answer (WebtunnelWireTests): the reference server's, nginx's, refusals.
seed("WebtunnelUpgradeFuzzer", "reference", "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n")
seed("WebtunnelUpgradeFuzzer", "nginx", "HTTP/1.1 101 Switching Protocols\r\nServer: nginx/1.22.1\r\nDate: Tue, 01 Dec 2026 08:21:18 GMT\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n\x16\x03\x03")
seed("WebtunnelUpgradeFuzzer", "cover-page", "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 12\r\n\r\n<p>hello</p>")
seed("WebtunnelUpgradeFuzzer", "bare-lf", "HTTP/1.0 101 Switching Protocols\nupgrade: WebSocket\nconnection: Upgrade\n\n")

# WebSocket client handshake (HostileWebSocketTests' attacks): mode 0 arbitrary reply after a
# read-size chunk; mode 6 the same behind a head padded to the cap; mode 1 a reply built by the harness.
accept_head = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
seed("WebSocketHandshakeFuzzer", "valid-with-frame", bytes([0, 3, 1, 7, 50]) + accept_head + bytes([0x81, 1, 0x41]))
seed("WebSocketHandshakeFuzzer", "refused", bytes([0, 0]) + b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
seed("WebSocketHandshakeFuzzer", "endless-headers", bytes([0, 1, 200]) + b"HTTP/1.1 101 Switching Protocols\r\n" + b"X-Filler: aaaaaaaaaaaaaaaa\r\n" * 40)
seed("WebSocketHandshakeFuzzer", "at-the-cap", bytes([6 | (4 << 3), 0]) + b"\r\n\r\n")
seed("WebSocketHandshakeFuzzer", "lf-only", bytes([0, 0]) + accept_head.replace(b"\r\n", b"\n"))
seed("WebSocketHandshakeFuzzer", "built", bytes([1, 2, 1, 5, 0x03, 0x21]) + b"abcdefghijkl" + bytes([0x80]) + bytes([0x81, 2]) + b"hi")

# obfs4 client handshake state machine (byte 0 unused, byte 1 = number of read sizes, the sizes):
# Obfs4ClientSessionFuzzer takes a real server reply (a flip byte, padding length, padding, frames as
# length/padding headers), Obfs4ClientHandshakeFuzzer an arbitrary reply.
seed("Obfs4ClientSessionFuzzer", "real-small-reads", bytes([31, 4, 0, 9, 200, 255, 0, 0, 40]) + bytes(40) + bytes([0, 5, 2]) + b"hello" + bytes([0, 0, 200]))
seed("Obfs4ClientSessionFuzzer", "real-max-padding", bytes([31, 0, 0, 0x1f, 0xa0]) + bytes(range(256)) * 4 + bytes([5, 0x93, 0]) + bytes(1427))
seed("Obfs4ClientSessionFuzzer", "real-flipped", bytes([31, 1, 100, 0x11, 0, 16]) + bytes(16) + bytes([0, 3, 0]) + b"abc")
seed("Obfs4ClientHandshakeFuzzer", "random-reply", bytes([0, 3, 31, 63, 127]) + bytes((i * 37) & 0xFF for i in range(600)))
seed("Obfs4ClientHandshakeFuzzer", "max-padding-no-mark", bytes([0, 2, 255, 255]) + bytes((i * 101) & 0xFF for i in range(8300)))

# Noise NK (NoiseNKTests' flynn/noise vectors): mode 0 an arbitrary first message (flynn's real
# ones and the ones it refuses), mode 1 a real one built and edited by the harness, mode 2 a
# cipher state fed real and forged transport messages.
noise = json.load(open(os.path.join(root, "Tests/CryptoTests/Vectors/noise-nk-flynn.json")))
for case in noise["cases"]:
    seed("NoiseNKFuzzer", "first-" + case["name"], bytes([0]) + bytes.fromhex(case["message1"]))
for case in noise["refused"]:
    seed("NoiseNKFuzzer", "refused-" + case["name"], bytes([0]) + bytes.fromhex(case["message1"]))
seed("NoiseNKFuzzer", "real-plain", bytes([1]) + bytes(range(0x21, 0x41)) + bytes([0, 0]))
seed("NoiseNKFuzzer", "real-flipped", bytes([1]) + bytes(range(0x21, 0x41)) + bytes([5]) + b"hello" + bytes([1, 0, 200]))
seed("NoiseNKFuzzer", "real-cut", bytes([1]) + bytes(range(32)) + bytes([0, 2, 47]))
seed("NoiseNKFuzzer", "transport", bytes([2, 2, 5]) + b"hello" + bytes([0, 3]) + b"abc" + bytes([0x80])
     + bytes([0, 0, 1, 1, 0, 9, 0, 1, 2, 1, 20, 3, 17]) + bytes(17) + bytes([0, 0]))
seed("NoiseNKFuzzer", "transport-at-the-end", bytes([2, 0, 4]) + b"last" + bytes([0, 1]) + b"x" + bytes([0x80]) + bytes([0, 0, 0, 0, 0, 1]))

# dnstt (DnsttTests, from the dnstt protocol notes' §7 vectors, domain t.example.com).
dnstt_query1 = bytes.fromhex(
    "1234010000010000000000013f696e676573726b6f6b7265756a79367a756d6b73653433766f627378657933626e72"
    "75776d3474626d35757779326c746f727577677a6c796f6275776333640d6a6d72787767326c706f767a7101740765"
    "78616d706c6503636f6d00001000010000291000000000000000")
dnstt_poll = bytes.fromhex(
    "abcd010000010000000000011c616572756b7a346a76706736373261616165626167626166617964710174076578"
    "616d706c6503636f6d00001000010000291000000000000000")
dnstt_response = bytes.fromhex(
    "abcd840000010001000000011c616572756b7a346a76706736373261616165626167626166617964710174076578"
    "616d706c6503636f6d0000100001c00c001000010000003c000f0e000568656c6c6f0005776f726c640000291000"
    "000000000000")
seed("DnsMessageFuzzer", "query-data", dnstt_query1)
seed("DnsMessageFuzzer", "query-poll", dnstt_poll)
seed("DnsMessageFuzzer", "response-two-packets", dnstt_response)
seed("DnsMessageFuzzer", "pointer-loop", bytes.fromhex("123484000001000000000000") + bytes([1, 0x61, 0xC0, 16, 0xC0, 12, 0, 16, 0, 1]))
# DnsttQueryFuzzer: shape (label count − 1, bit 2 = poll), label lengths, ClientID, padding, packet, ID.
seed("DnsttQueryFuzzer", "vector1", bytes([2, 1, 7, 3]) + b"CLIENTID" + bytes([3, 0xd9, 0xa3, 0x15, 34])
     + b"supercalifragilisticexpialidocious" + bytes([0x12, 0x34]))
seed("DnsttQueryFuzzer", "poll", bytes([6, 1, 7, 3]) + bytes.fromhex("0123456789abcdef") + bytes([8]) + bytes(range(8)) + bytes([0xab, 0xcd]))
seed("DnsttQueryFuzzer", "full", bytes([2, 1, 7, 3]) + bytes(8) + bytes([3, 1, 2, 3, 134]) + bytes(range(134)) + bytes([0, 1]))
seed("DnsttQueryFuzzer", "long-domain", bytes([3, 63, 63, 63, 40]) + bytes(8) + bytes([3, 1, 2, 3, 10]) + bytes(10))
# DnsttDownstreamFuzzer: mode 0 raw TXT RDATA (also read as a payload), mode 1 built packets (u16 lengths).
seed("DnsttDownstreamFuzzer", "txt-hello-world", bytes([0]) + bytes.fromhex("0e000568656c6c6f0005776f726c64"))
seed("DnsttDownstreamFuzzer", "txt-long", bytes([0]) + bytes([255]) + bytes(255) + bytes([3, 0, 1, 9]))
seed("DnsttDownstreamFuzzer", "built", bytes([1, 0, 5]) + b"hello" + bytes([0, 0, 3, 0xA0]) + bytes(928))
# NoiseFrameFuzzer: mode 0 a raw stream (the notes' framed transport messages), mode 1 sealed writes.
seed("NoiseFrameFuzzer", "notes-messages", bytes([0, 2, 3, 1]) + bytes.fromhex(
    "0018c7f5e19ba3c314d79d87c656c430ea4fd06c0ad52689f7f9001dc4c8ad619530cdb9c89508ab497f8fe683cd864e9e280de01825f7cf55"))
seed("NoiseFrameFuzzer", "short-length", bytes([0, 0, 0, 15]) + bytes(15))
seed("NoiseFrameFuzzer", "sealed", bytes([1, 2, 5, 9]) + bytes([0x40, 0x05]) + bytes([0, 5, 0x30, 0x00]))
# DnsttSessionFuzzer: operations (0 clock+answer, 1 deliver pooled answer, 2 raw bytes, 3 forged
# KCP segments under the domain, 4 client write, 5 server write, 6 consume). A clean handshake and
# exchange, the same with answers replayed out of order and twice, and forgeries in between.
session_rounds = bytes(b for k in range(24) for b in (0, 1, 1, k))
seed("DnsttSessionFuzzer", "handshake-and-data", session_rounds + bytes([4, 5]) + b"hello" + bytes([5, 0, 6]) + b"world!"
     + bytes(b for k in range(24, 40) for b in (0, 1, 1, k)) + bytes([6, 0, 6]))
seed("DnsttSessionFuzzer", "replayed", bytes(b for k in range(24) for b in (0, 3, 1, (k * 7) % 5, 1, k % 3)))
seed("DnsttSessionFuzzer", "forged", session_rounds + bytes([2, 0, 3, 1, 2, 3]) + bytes([3, 2, 0, 0, 64, 0, 1, 5, 0, 3]) + b"abc"
     + bytes([0, 3, 0, 200]) + bytes([0, 0, 5]) + b"\x00\x30xyz" + bytes([1]))
seed("NoiseFrameFuzzer", "sealed-flip", bytes([1, 1, 7]) + bytes([0x00, 0x20]) + bytes([0, 100, 0, 8]))
# DoHResponseFuzzer (DoHLinkTests' answers): mode 0 raw bytes (a size chunk, then the answer), mode 1
# built answers (shape: framing in the low bits, content type in the high; status pick; read sizes;
# chunk sizes; body), mode 2 Retry-After values.
seed("DoHResponseFuzzer", "chunked-continue", bytes([0, 2, 7, 3]) + b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"
     b"Content-Type: application/dns-message\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n")
seed("DoHResponseFuzzer", "rate-limited", bytes([0, 1, 5]) + b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\nContent-Length: 4\r\n\r\nslow")
seed("DoHResponseFuzzer", "until-close", bytes([0, 0]) + b"HTTP/1.0 200 OK\r\nContent-Type: application/dns-message\r\n\r\n\x12\x34\x81\x80")
seed("DoHResponseFuzzer", "too-long", bytes([0, 0]) + b"HTTP/1.1 200 OK\r\nContent-Length: 64001\r\n\r\n")
seed("DoHResponseFuzzer", "built-length", bytes([1, 0x00, 0, 2, 3, 9, 1, 5]) + bytes(range(60)))
seed("DoHResponseFuzzer", "built-chunked", bytes([1, 0x11, 1, 1, 7, 2, 1, 3]) + bytes(range(200)))
seed("DoHResponseFuzzer", "built-close", bytes([1, 0x22, 3, 0, 0]) + bytes(40))
seed("DoHResponseFuzzer", "retry-seconds", bytes([2]) + b"120")
seed("DoHResponseFuzzer", "retry-imf", bytes([2]) + b"Fri, 15 Jan 2027 08:00:00 GMT")
seed("DoHResponseFuzzer", "retry-rfc850", bytes([2]) + b"Friday, 15-Jan-27 08:00:00 GMT")
seed("DoHResponseFuzzer", "retry-asctime", bytes([2]) + b"Fri Jan 15 08:00:00 2027")
