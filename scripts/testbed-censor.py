#!/usr/bin/env python3
"""The test bed's judges for its `fet` and `fingerprint` censors, and the probes its checks use.

`fet`: the Great Firewall's detector of fully encrypted traffic, with the
exemption rules Wu et al. published ("How the Great Firewall of China Detects and Blocks Fully
Encrypted Traffic", USENIX Security 2023, section 4), computed exactly on the real payload.

The censor's nftables chain (scripts/testbed-censors) sends every client packet that carries data
on a flow to a relay or bridge here (client to server only), and its SYN (which starts a flow anew). They arrive on a TUN device (tbc-fet),
steered as the link profiles steer theirs (scripts/testbed-link: a packet mark, then `fwd` in a
netdev egress chain on lo). The first data packet of a flow is judged; the flow's later packets
follow its verdict:

  exempt (any rule Ex1-Ex5 holds)  -> written back into the device: the kernel delivers it as if it
                                      came off a wire;
  not exempt, with probability P   -> dropped; the server's ip:port goes into the censor's
                                      `fet_blocked` set (nftables drops every client packet to it
                                      until the element times out), then a forged RST from the
                                      server is written into the device, so the client is reset;
                                      the flow's later packets are dropped;
  not exempt, otherwise            -> passed like an exempt one.

  testbed-censor.py fet --device DEV --table T --probability P --block-seconds S [--seed N]
                        --ready FILE
  testbed-censor.py fingerprint --device DEV --table T --block-seconds S [--rules R,...] --ready FILE
                                         the fingerprinting censor (scripts/testbed_fingerprint.py
                                         decides; blocked flows go into the set fp_blocked)
  testbed-censor.py judge HEX...         the verdict of each payload (hex), one line each
  testbed-censor.py probe ADDR PORT HEX  connect, send the payload, report reset / open / blocked
  testbed-censor.py byte-server ADDR PORT SIZE   serve SIZE bytes to every connection (network gid)
  testbed-censor.py byte-probe ADDR PORT IDLE    count bytes until EOF or IDLE seconds of silence
  testbed-censor.py connect-burst ADDR PORT COUNT TIMEOUT   COUNT connects at once, report each
  testbed-censor.py stats --censor NAME [--judge FILE] [--base FILE] [--names SPEC] [--json] < NFT_JSON
                                         censor-stats: connections and blocked connections per
                                         ip:port from the censor's counted sets (`nft -j list
                                         set`, concatenated), plus the judge's
  testbed-censor.py self-test            the rules and the packet code on fixed inputs
  testbed-censor.py fingerprint-self-test   the fingerprint judge on captured hellos

Only the standard library is used.
"""

import argparse
import json
import os
import random
import select
import signal
import socket
import struct
import subprocess
import sys
import time

from testbed_fingerprint import FingerprintJudge, Packet, rules_named
from testbed_tun import close_inherited_descriptors, ip_packet, open_tun

# ---------------------------------------------------------------------------------------------
# The rules (Wu et al. 2023, section 4.1; "printable" is 0x20-0x7e in all of them).
POPCOUNT_LOW = 3.4    # Ex1: average set bits per byte at most this ...
POPCOUNT_HIGH = 4.6   # ... or at least this: exempt (random bytes average 4.0)
PRINTABLE_PREFIX = 6  # Ex2: the first six bytes printable
PRINTABLE_SHARE = 0.5  # Ex3: more than half the bytes printable
PRINTABLE_RUN = 20    # Ex4: more than twenty contiguous printable bytes
HTTP_PREFIXES = (b"GET ", b"PUT ", b"POST", b"HEAD")  # Ex5, with the TLS record prefix below


def printable(byte):
    return 0x20 <= byte <= 0x7E


def exemption(payload):
    """The first rule that exempts `payload` ("Ex1".."Ex5"), or None: the flow is fully encrypted
    in the censor's eyes. An empty payload is no data packet and is never judged."""
    if not payload:
        return "empty"
    ones = sum(bin(byte).count("1") for byte in payload) / len(payload)
    if ones <= POPCOUNT_LOW or ones >= POPCOUNT_HIGH:
        return "Ex1"
    if len(payload) >= PRINTABLE_PREFIX and all(printable(b) for b in payload[:PRINTABLE_PREFIX]):
        return "Ex2"
    if sum(printable(b) for b in payload) > PRINTABLE_SHARE * len(payload):
        return "Ex3"
    run = longest = 0
    for byte in payload:
        run = run + 1 if printable(byte) else 0
        longest = max(longest, run)
    if longest > PRINTABLE_RUN:
        return "Ex4"
    # TLS: a handshake or application-data record of any version 3.x ([\x16-\x17]\x03[\x00-\x09]).
    if len(payload) >= 3 and payload[0] in (0x16, 0x17) and payload[1] == 0x03 and payload[2] <= 0x09:
        return "Ex5"
    if payload[:4] in HTTP_PREFIXES:
        return "Ex5"
    return None


# ---------------------------------------------------------------------------------------------
# Packets (raw IPv4 as read from / written to a TUN device without packet information).
WIRE_MSS = 1460  # the censor clamps these flows' SYNs to it: a wire's segment, not loopback's 64 KB


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


class Segment:
    """The fields of a TCP/IPv4 packet this censor needs; None from `parse` for anything else."""

    def __init__(self, src, dst, sport, dport, seq, ack, flags, options_len, payload):
        self.src, self.dst, self.sport, self.dport = src, dst, sport, dport
        self.seq, self.ack, self.flags = seq, ack, flags
        self.options_len = options_len
        self.payload = payload

    @staticmethod
    def parse(packet):
        if len(packet) < 20 or packet[0] >> 4 != 4 or packet[9] != socket.IPPROTO_TCP:
            return None
        ihl = (packet[0] & 0x0F) * 4
        total = struct.unpack_from("!H", packet, 2)[0]
        # A GSO packet handed over whole may carry 0 or a short total; trust the buffer then.
        end = total if ihl + 20 <= total <= len(packet) else len(packet)
        if ihl < 20 or end < ihl + 20:
            return None
        sport, dport, seq, ack, offset, flags = struct.unpack_from("!HHIIBB", packet, ihl)
        doff = (offset >> 4) * 4
        if doff < 20 or ihl + doff > end:
            return None
        return Segment(packet[12:16], packet[16:20], sport, dport, seq, ack, flags, doff - 20,
                       bytes(packet[ihl + doff:end]))

    def first_wire_packet(self):
        """The payload a wire would carry in this flow's first data packet: the censor judges
        that, not a loopback GSO packet of up to 64 KB. The SYN's MSS (clamped to 1460) less the
        TCP options the segment carries, as Linux sizes its segments."""
        return self.payload[: WIRE_MSS - self.options_len]

    def forged_reset(self):
        """RST+ACK from the server to the client: sequence number = what the client acknowledged
        (its receive window's left edge, which Linux accepts exactly), ack = past this payload."""
        tcp = struct.pack("!HHIIBBHHH", self.dport, self.sport, self.ack,
                          (self.seq + len(self.payload)) & 0xFFFFFFFF, 5 << 4, 0x14, 0, 0, 0)
        pseudo = self.dst + self.src + struct.pack("!BBH", 0, socket.IPPROTO_TCP, len(tcp))
        tcp = tcp[:16] + struct.pack("!H", checksum(pseudo + tcp)) + tcp[18:]
        header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64,
                             socket.IPPROTO_TCP, 0, self.dst, self.src)
        header = header[:10] + struct.pack("!H", checksum(header)) + header[12:]
        return header + tcp


def endpoint(address_bytes, port):
    return f"{socket.inet_ntoa(address_bytes)}:{port}"


# ---------------------------------------------------------------------------------------------
# The censor process.
def block(table, segment, seconds):
    """Adds the server's ip:port to the censor's block set, timing out after `seconds`."""
    element = f"{{ {socket.inet_ntoa(segment.dst)} . {segment.dport} timeout {seconds}s }}"
    result = subprocess.run(["nft", "add", "element", "inet", table, "fet_blocked", element],
                            capture_output=True, text=True, timeout=10, check=False)
    return result.returncode == 0, result.stderr.strip()


FLOW_IDLE_SECONDS = 600  # a verdict is forgotten after this long without a packet of its flow
FLOW_LIMIT = 65536       # at most this many verdicts kept (the oldest go first)


def announce_ready(ready, stats):
    """Writes the judge's counters to READY.stats and its pid to READY (each atomically), which
    scripts/testbed-censors waits for; returns the function that rewrites the counters."""
    stats_path = ready + ".stats"

    def write_stats():
        with open(stats_path + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(stats, handle, sort_keys=True)
        os.replace(stats_path + ".tmp", stats_path)

    write_stats()
    with open(ready + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(f"{os.getpid()}\n")
    os.replace(ready + ".tmp", ready)
    return write_stats


def fet(args):
    close_inherited_descriptors()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    signal.signal(signal.SIGINT, lambda *_: stop.__setitem__(0, True))
    rng = random.Random(args.seed)
    fd = open_tun(args.device)
    stats = {"judged": 0, "exempt": {}, "flagged": 0, "reset": 0, "spared": 0, "block_failed": 0,
             "not_tcp": 0, "reset_peers": {}}
    write_stats = announce_ready(args.ready, stats)
    print(f"fet: P={args.probability}% block {args.block_seconds}s seed {args.seed}", flush=True)
    poller = select.epoll()
    poller.register(fd, select.EPOLLIN)
    verdicts = {}  # (client ip, client port, server ip, server port) -> [passed?, last packet time]
    last_prune = time.monotonic()
    while not stop[0]:
        try:
            events = poller.poll(1.0)
        except InterruptedError:
            continue
        now = time.monotonic()
        if now - last_prune > 1:
            last_prune = now
            for key in [k for k, v in verdicts.items() if now - v[1] > FLOW_IDLE_SECONDS]:
                del verdicts[key]
            write_stats()
        if not events:
            continue
        for _ in range(256):
            try:
                frame = os.read(fd, 65600)
            except BlockingIOError:
                break
            packet = ip_packet(frame)
            segment = Segment.parse(packet) if packet is not None else None
            if segment is not None and segment.flags & 0x12 == 0x02:
                # A client's SYN: a new flow on these four values, whatever an earlier one did.
                verdicts.pop((segment.src, segment.sport, segment.dst, segment.dport), None)
                os.write(fd, packet)
                continue
            if segment is None or not segment.payload:
                # Nothing the chain should send; pass it rather than break a flow.
                stats["not_tcp"] += 1
                if packet is not None:
                    os.write(fd, packet)
                continue
            key = (segment.src, segment.sport, segment.dst, segment.dport)
            now = time.monotonic()
            verdict = verdicts.get(key)
            if verdict is not None:
                verdict[1] = now
                if verdict[0]:
                    os.write(fd, packet)
                else:
                    stats["dropped_after"] = stats.get("dropped_after", 0) + 1
                continue
            stats["judged"] += 1
            flow = f"{endpoint(segment.src, segment.sport)} -> {endpoint(segment.dst, segment.dport)}"
            judged = segment.first_wire_packet()
            rule = exemption(judged)
            if len(verdicts) >= FLOW_LIMIT:
                del verdicts[min(verdicts, key=lambda k: verdicts[k][1])]
            if rule is not None:
                verdicts[key] = [True, now]
                stats["exempt"][rule] = stats["exempt"].get(rule, 0) + 1
                print(f"pass {flow}: {rule} ({len(judged)} bytes judged)", flush=True)
                os.write(fd, packet)
                continue
            stats["flagged"] += 1
            if rng.random() * 100 >= args.probability:
                verdicts[key] = [True, now]
                stats["spared"] += 1
                print(f"spare {flow}: fully encrypted, not picked (P={args.probability}%)", flush=True)
                os.write(fd, packet)
                continue
            verdicts[key] = [False, now]
            # The block first, so that the client's reconnect after the RST already meets it.
            ok, error = block(args.table, segment, args.block_seconds)
            if not ok:
                stats["block_failed"] += 1
                print(f"could not block {endpoint(segment.dst, segment.dport)}: {error}", flush=True)
            os.write(fd, segment.forged_reset())
            stats["reset"] += 1
            server = endpoint(segment.dst, segment.dport)
            stats["reset_peers"][server] = stats["reset_peers"].get(server, 0) + 1
            print(f"reset {flow}: fully encrypted ({len(judged)} bytes judged); "
                  f"{endpoint(segment.dst, segment.dport)} dropped for {args.block_seconds}s", flush=True)
    write_stats()


# ---------------------------------------------------------------------------------------------
# The fingerprinting censor (scripts/testbed_fingerprint.py decides; this loop does the I/O).
def block_flow(table, element, seconds):
    """Adds a flow to the censor's `fp_blocked` set: nftables drops both of its directions."""
    result = subprocess.run(["nft", "add", "element", "inet", table, "fp_blocked",
                             f"{{ {element} timeout {seconds}s }}"],
                            capture_output=True, text=True, timeout=10, check=False)
    return result.returncode == 0, result.stderr.strip()


def fingerprint(args):
    close_inherited_descriptors()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    signal.signal(signal.SIGINT, lambda *_: stop.__setitem__(0, True))
    rules = rules_named(args.rules)
    judge = FingerprintJudge(rules)
    fd = open_tun(args.device)
    stats = {"judged": 0, "blocked": {}, "block_failed": 0, "dropped_after": 0, "not_ip": 0,
             "timed_out": 0}
    write_stats = announce_ready(args.ready, stats)
    print(f"fingerprint: rules {', '.join(r.name for r in rules)}; blocked flows dropped for "
          f"{args.block_seconds}s", flush=True)
    poller = select.epoll()
    poller.register(fd, select.EPOLLIN)
    last_prune = time.monotonic()
    while not stop[0]:
        try:
            events = poller.poll(1.0)
        except InterruptedError:
            continue
        now = time.monotonic()
        if now - last_prune > 1:
            last_prune = now
            stats["timed_out"] += judge.prune(now)
            write_stats()
        if not events:
            continue
        for _ in range(256):
            try:
                frame = os.read(fd, 65600)
            except BlockingIOError:
                break
            packet = ip_packet(frame)
            parsed = Packet.parse(packet) if packet is not None else None
            if parsed is None:
                # Nothing the chain should send; pass it rather than break a flow.
                stats["not_ip"] += 1
                if packet is not None:
                    os.write(fd, packet)
                continue
            verdict = judge.judge(parsed, time.monotonic())
            if verdict.counter is not None:
                stats[verdict.counter] = stats.get(verdict.counter, 0) + 1
            if verdict.line is not None:
                stats["judged"] += 1
            if verdict.action == "block":
                stats["blocked"][verdict.rule] = stats["blocked"].get(verdict.rule, 0) + 1
                ok, error = block_flow(args.table, verdict.element, args.block_seconds)
                if not ok:
                    stats["block_failed"] += 1
                    print(f"could not block {parsed.flow()}: {error}", flush=True)
            if verdict.line is not None:
                print(verdict.line, flush=True)
            if verdict.action == "pass":
                os.write(fd, packet)
    write_stats()


# ---------------------------------------------------------------------------------------------
# Probes for `testbed check` (run inside the namespace).
def probe(args):
    """Connects, sends the payload and reports what came back within a second: `reset MS` (an
    RST, milliseconds after the send), `open` (nothing), `closed` (EOF or data: the server
    answered), `blocked` (no connection within the timeout)."""
    payload = bytes.fromhex(args.payload)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(args.timeout)
    try:
        sock.connect((args.address, args.port))
    except (socket.timeout, OSError):
        print("blocked")
        return 0
    sent = time.monotonic()
    sock.sendall(payload)
    sock.settimeout(1.0)
    try:
        data = sock.recv(65536)
        print("closed" if not data else "answered")
    except socket.timeout:
        print("open")
    except ConnectionResetError:
        print(f"reset {1000 * (time.monotonic() - sent):.0f}")
    finally:
        sock.close()
    return 0


def byte_server(args):
    """Serves `size` bytes to each connection, one thread-free connection at a time, for at most
    `lifetime` seconds (a check's helper must not outlive it)."""
    close_inherited_descriptors()
    # Started from a Swift test, it inherits a blocked TERM; `check` stops it with TERM.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((args.address, args.port))
    server.listen(8)
    print("listening", flush=True)
    deadline = time.monotonic() + args.lifetime
    server.settimeout(1.0)
    block_ = bytes(range(256)) * 64
    while time.monotonic() < deadline:
        try:
            conn, _ = server.accept()
        except socket.timeout:
            continue
        conn.settimeout(2.0)
        sent = 0
        try:
            while sent < args.size and time.monotonic() < deadline:
                sent += conn.send(block_[: min(len(block_), args.size - sent)])
        except (socket.timeout, OSError):
            pass  # a frozen client: the send buffer filled up and stayed full
        conn.close()


def byte_probe(args):
    """Reads until EOF or `idle` seconds without a byte; prints `BYTES eof|stalled|reset`."""
    sock = socket.create_connection((args.address, args.port), timeout=5)
    sock.settimeout(args.idle)
    received, how = 0, "eof"
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                break
            received += len(data)
    except socket.timeout:
        how = "stalled"
    except ConnectionResetError:
        how = "reset"
    print(f"{received} {how}")
    return 0


def connect_burst(args):
    """Starts `count` connects to one ip:port at once (non-blocking) and prints, per connect in
    order of the SYNs, `ok` or `timeout` after `timeout` seconds."""
    socks = []
    for _ in range(args.count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.connect_ex((args.address, args.port))
        socks.append(sock)
    pending = {sock.fileno(): index for index, sock in enumerate(socks)}
    result = ["timeout"] * args.count
    deadline = time.monotonic() + args.timeout
    while pending and time.monotonic() < deadline:
        _, writable, _ = select.select([], [socks[i] for i in pending.values()], [], deadline - time.monotonic())
        for sock in writable:
            index = pending.pop(sock.fileno())
            error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            result[index] = "ok" if error == 0 else os.strerror(error).replace(" ", "-")
    for sock in socks:
        sock.close()
    print(" ".join(result))
    return 0


# ---------------------------------------------------------------------------------------------
def set_counts(documents, name):
    """{"ip:port": packets} of the counted set `name` in `nft -j list set` documents."""
    counts = {}
    for document in documents:
        for item in document.get("nftables", []):
            found = item.get("set")
            if not found or found.get("name") != name:
                continue
            for element in found.get("elem", []):
                inner = element.get("elem", element) if isinstance(element, dict) else {}
                value = inner.get("val", {}) if isinstance(inner, dict) else {}
                parts = value.get("concat") if isinstance(value, dict) else None
                counter = inner.get("counter", {}) if isinstance(inner, dict) else {}
                if not parts or len(parts) != 2:
                    continue
                key = f"{parts[0]}:{parts[1]}"
                counts[key] = counts.get(key, 0) + int(counter.get("packets", 0))
    return counts


def json_documents(text):
    """The JSON documents in `text`, one after the other (nft prints one per `list set`)."""
    decoder, documents, index = json.JSONDecoder(), [], 0
    while index < len(text):
        while index < len(text) and text[index].isspace():
            index += 1
        if index >= len(text):
            break
        document, index = decoder.raw_decode(text, index)
        documents.append(document)
    return documents


def judge_blocked(stats):
    """The flows a judge blocked by its own hand: fet's resets, fingerprint's drops, and per
    ip:port where the judge keeps it."""
    if "reset" in stats:
        return int(stats.get("reset", 0)), dict(stats.get("reset_peers", {}))
    return sum(int(v) for v in stats.get("blocked", {}).values()), {}


def censor_stats(censor, nft_text, judge, base, names):
    connections = set_counts(json_documents(nft_text), "conns") if nft_text.strip() else {}
    blocked = set_counts(json_documents(nft_text), "blocked") if nft_text.strip() else {}
    judged_total, judged_peers = judge_blocked(judge)
    base_total, base_peers = judge_blocked(base)
    for peer, count in judged_peers.items():
        count -= base_peers.get(peer, 0)
        if count > 0:
            blocked[peer] = blocked.get(peer, 0) + count
    judged_total -= base_total
    # A judge's blocks without an ip:port (fingerprint) count in the total only.
    peer_blocked = sum(blocked.values())
    total = peer_blocked + max(0, judged_total - sum(max(0, c - base_peers.get(p, 0)) for p, c in judged_peers.items()))
    peers = sorted(set(connections) | set(blocked))
    return {
        "censor": censor,
        "peers": [{"peer": p, "name": names.get(p, names.get(p.split(":")[0], "")),
                   "connections": connections.get(p, 0), "blocked": blocked.get(p, 0)} for p in peers],
        "connections_total": sum(connections.values()),
        "blocked_total": total,
    }


def stats_command(args):
    names = {}
    for pair in filter(None, args.names.split(",")):
        key, _, value = pair.partition("=")
        names[key] = value

    def load(path):
        try:
            with open(path, encoding="utf-8") as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return {}

    result = censor_stats(args.censor, sys.stdin.read(), load(args.judge) if args.judge else {},
                          load(args.base) if args.base else {}, names)
    if args.json:
        print(json.dumps(result, sort_keys=True))
        return 0
    print(f"censor {result['censor']}: {result['connections_total']} connections, "
          f"{result['blocked_total']} blocked")
    for peer in result["peers"]:
        label = f"{peer['peer']} ({peer['name']})" if peer["name"] else peer["peer"]
        print(f"  {label:<32} connections {peer['connections']:>4}  blocked {peer['blocked']:>4}")
    return 0


def stats_self_test(failures):
    """The parsing and arithmetic of `stats` on a fixed `nft -j` output."""
    def document(name, elements):
        return json.dumps({"nftables": [{"metainfo": {}}, {"set": {"name": name, "elem": [
            {"elem": {"val": {"concat": [a, p]}, "counter": {"packets": n, "bytes": 60 * n}}}
            for a, p, n in elements]}}]})
    text = document("conns", [("127.0.3.2", 5100, 3), ("127.0.3.1", 5000, 1)]) + "\n" + \
        document("blocked", [("127.0.3.2", 5100, 1)])
    got = censor_stats("fet", text, {"reset": 3, "reset_peers": {"127.0.3.2:5100": 3}},
                       {"reset": 1, "reset_peers": {"127.0.3.2:5100": 1}}, {"127.0.3.2": "bridge-obfs4"})
    want = {"censor": "fet", "connections_total": 4, "blocked_total": 3, "peers": [
        {"peer": "127.0.3.1:5000", "name": "", "connections": 1, "blocked": 0},
        {"peer": "127.0.3.2:5100", "name": "bridge-obfs4", "connections": 3, "blocked": 3}]}
    if got != want:
        failures.append(f"stats: {got} != {want}")
    got = censor_stats("fingerprint", "", {"blocked": {"openssl-3.0-default": 2}}, {}, {})
    if got["blocked_total"] != 2 or got["peers"]:
        failures.append(f"stats (fingerprint): {got}")


def self_test():
    failures = []

    def expect(condition, what):
        if not condition:
            failures.append(what)

    stats_self_test(failures)
    rng = random.Random(22)
    random_bytes = bytes(rng.getrandbits(8) for _ in range(600))
    expect(exemption(random_bytes) is None, f"random bytes exempt by {exemption(random_bytes)}")
    # Ex1: popcount. 0x0f has 4 bits: alone it is not exempt; mixed with 0x01 (1 bit) it is.
    expect(exemption(bytes([0x0F, 0xF0, 0x3C, 0xC3] * 50)) is None, "popcount 4.0 exempt")
    expect(exemption(bytes([0x01, 0x0F] * 100)) == "Ex1", "popcount 2.5 not exempt")
    expect(exemption(bytes([0xFF, 0x0F] * 100)) == "Ex1", "popcount 6.0 not exempt")
    # Exactly 3.4 is exempt (<=), just above is not: 10 bytes with 34 bits.
    at_low = bytes([0x0F] * 6 + [0x07] * 4)  # 24 + 12 = 36 bits: 3.6, not exempt
    expect(exemption(at_low) is None, "popcount 3.6 exempt")
    at_edge = bytes([0x0F] * 4 + [0x07] * 6)  # 16 + 18 = 34 bits: 3.4
    expect(exemption(at_edge) == "Ex1", f"popcount 3.4 gave {exemption(at_edge)}")
    # Ex2: six printable bytes first, the rest random.
    expect(exemption(b"abcdef" + random_bytes) == "Ex2", "printable prefix not exempt")
    expect(exemption(b"abcde" + random_bytes) is None, "five printable bytes exempt")
    # Ex3: more than half printable (but no 6-byte prefix and no run over 20).
    mixed = b"".join(bytes([0x80 | rng.getrandbits(7)]) + bytes([0x41 + i % 26]) * 1 + b"xy"
                     for i in range(100))  # 3 printable of every 4
    expect(exemption(mixed) == "Ex3", f"75 % printable gave {exemption(mixed)}")
    # Ex4: a run of 21 printable bytes inside non-printable ones (high bit set); 20 is not enough.
    base = bytes(rng.getrandbits(8) | 0x80 for _ in range(300))
    expect(exemption(base[:150] + b"q" * 21 + base[150:]) == "Ex4", "run of 21 not exempt")
    expect(exemption(base[:150] + b"q" * 20 + base[150:]) is None, "run of 20 exempt")
    # Ex5: TLS record prefixes and HTTP methods.
    expect(exemption(b"\x16\x03\x01" + random_bytes) == "Ex5", "TLS handshake not exempt")
    expect(exemption(b"\x17\x03\x03" + random_bytes) == "Ex5", "TLS application data not exempt")
    expect(exemption(b"\x16\x03\x0a" + random_bytes) is None, "TLS 3.10 exempt")
    expect(exemption(b"\x15\x03\x03" + random_bytes) is None, "TLS alert exempt")
    expect(exemption(b"POST" + b"\x80" + random_bytes) == "Ex5", "POST not exempt")
    expect(exemption(b"GET " + b"\x80" + random_bytes) == "Ex5", "GET not exempt")
    # The first wire packet only: 1460 bytes less the options.
    seg = Segment(b"\x7f\0\0\1", b"\x7f\0\3\2", 40000, 5100, 1000, 2000, 0x18, 12, b"\0" * 5000)
    expect(len(seg.first_wire_packet()) == 1448, "first wire packet with timestamps not 1448 bytes")
    # The forged reset: valid checksums, addresses and ports swapped, seq = the client's ack.
    rst = Segment.parse(seg.forged_reset())
    expect(rst is not None and rst.src == seg.dst and rst.dst == seg.src and rst.sport == 5100
           and rst.dport == 40000 and rst.seq == 2000 and rst.ack == 6000 and rst.flags == 0x14,
           "forged reset fields")
    packet = seg.forged_reset()
    expect(checksum(packet[:20]) == 0, "IP checksum")
    pseudo = packet[12:16] + packet[16:20] + struct.pack("!BBH", 0, 6, len(packet) - 20)
    expect(checksum(pseudo + packet[20:]) == 0, "TCP checksum")
    # A seeded draw is repeatable, and P=26 picks about a quarter.
    draws = random.Random(7)
    picked = sum(draws.random() * 100 < 26 for _ in range(10000))
    expect(2400 < picked < 2800, f"P=26 picked {picked} of 10000")
    expect([random.Random(3).random() for _ in range(2)] == [random.Random(3).random() for _ in range(2)],
           "seeded draws differ")
    for failure in failures:
        print(f"FAIL {failure}")
    print("fet rules self-test: " + ("ok" if not failures else f"{len(failures)} failed"))
    return 1 if failures else 0


# ---------------------------------------------------------------------------------------------
# The fingerprinting censor's self-test: captured hellos (scripts/testbed-hellos/, see its
# README) and hellos built from the recorded fields of captures this machine cannot repeat,
# through the judge as packets, as the censor's chain hands them over.
HELLOS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testbed-hellos")
CLIENT = (b"\x7f\0\0\1", 41000)
SERVER = (socket.inet_aton("198.51.100.10"), 443)


def ipv4(protocol, src, dst, transport):
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(transport), 0, 0x4000, 64, protocol, 0, src, dst)
    return header[:10] + struct.pack("!H", checksum(header)) + header[12:] + transport


def tcp_packet(seq, flags, payload, sport=CLIENT[1]):
    tcp = struct.pack("!HHIIBBHHH", sport, SERVER[1], seq, 0, 5 << 4, flags, 65535, 0, 0)
    return ipv4(socket.IPPROTO_TCP, CLIENT[0], SERVER[0], tcp + payload)


def udp_packet(src, dst, payload):
    udp = struct.pack("!HHHH", src[1], dst[1], 8 + len(payload), 0)
    return ipv4(socket.IPPROTO_UDP, src[0], dst[0], udp + payload)


def vec(length_bytes, data):
    return len(data).to_bytes(length_bytes, "big") + data


def u16s(*values):
    return b"".join(struct.pack("!H", v) for v in values)


def client_hello(ciphers, extensions, dtls=False):
    """A ClientHello handshake message (TLS: 4-byte header; DTLS: 12-byte, one fragment)."""
    body = (struct.pack("!H", 0xFEFD if dtls else 0x0303) + bytes(range(32)) + vec(1, b"" if dtls else bytes(32))
            + (vec(1, b"") if dtls else b"") + vec(2, u16s(*ciphers)) + b"\x01\x00"
            + vec(2, b"".join(struct.pack("!H", t) + vec(2, d) for t, d in extensions)))
    if dtls:
        return bytes([1]) + len(body).to_bytes(3, "big") + b"\0\0" + b"\0\0\0" + len(body).to_bytes(3, "big") + body
    return bytes([1]) + len(body).to_bytes(3, "big") + body


def chrome_hello():
    """chromium 156's ClientHello with a name (issue #21's captures, group chromium-name: cipher suites
    A, extension order B, groups A, signature algorithms A, ALPN, ECH GREASE 186 B, ALPS h2,
    brotli). Built from those recorded fields: no chromium package on this machine to capture."""
    grease = 0x3A3A
    return client_hello(
        [grease, 0x1301, 0x1302, 0x1303, 0xC02B, 0xC02F, 0xC02C, 0xC030, 0xCCA9, 0xCCA8, 0xC013, 0xC014,
         0x009C, 0x009D, 0x002F, 0x0035],
        [(0x8A8A, b""), (16, vec(2, vec(1, b"h2") + vec(1, b"http/1.1"))), (27, vec(1, u16s(2))),
         (45, vec(1, b"\x01")), (0xFE0D, bytes(186)), (17613, vec(2, vec(1, b"h2"))),
         (43, vec(1, u16s(0x5A5A, 0x0304, 0x0303))), (10, vec(2, u16s(0x4A4A, 0x11EC, 0x001D, 0x0017, 0x0018))),
         (0xFF01, b"\x00"), (11, vec(1, b"\x00")),
         (51, vec(2, u16s(0x4A4A) + vec(2, b"\x00") + u16s(0x11EC) + vec(2, bytes(1216)) + u16s(0x001D) + vec(2, bytes(32)))),
         (0, vec(2, b"\x00" + vec(2, b"fp.example"))),
         (13, vec(2, u16s(0x6A6A, 0x0904, 0x0905, 0x0906, 0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601))),
         (35, b""), (23, b""), (18, b""), (5, b"\x01\x00\x00\x00\x00"), (0xCA34, b""), (0x9A9A, b"\x00")])


def pion_hello():
    """pion's DTLS ClientHello as every snowflake proxy sends it (issue #21's captures, DTLS client
    side: cipher suites, extension order, groups, signature algorithms, use_srtp), built from the
    recorded fields (the bed's proxies send the real one)."""
    return client_hello(
        [0xC02B, 0xC02F, 0xC00A, 0xC014, 0xC02C, 0xC030],
        [(13, vec(2, u16s(0x0403, 0x0503, 0x0603, 0x0401, 0x0501, 0x0601, 0x0807))), (0xFF01, b"\x00"),
         (10, vec(2, u16s(0x001D, 0x0017, 0x0018))), (11, vec(1, b"\x00")),
         (14, vec(2, u16s(0x0007, 0x0001)) + vec(1, b"")), (23, b"")], dtls=True)


def tls_records(message, size=16384):
    return b"".join(b"\x16\x03\x01" + vec(2, message[i:i + size]) for i in range(0, len(message), size))


def dtls_datagram(fragment_messages):
    return b"".join(b"\x16\xfe\xfd" + b"\0\0" + struct.pack("!Q", i)[2:] + vec(2, m)
                    for i, m in enumerate(fragment_messages))


def run_tcp(judge, stream, order=None, mss=1448, sport=CLIENT[1]):
    """Feeds a SYN and `stream` in segments of `mss` (in `order` if given) to the judge;
    returns the verdicts of the data segments, in the order fed."""
    isn = 1000
    judge.judge(Packet.parse(tcp_packet(isn, 0x02, b"", sport)), 0.0)
    segments = [(isn + 1 + i, stream[i:i + mss]) for i in range(0, len(stream), mss)]
    verdicts = []
    for index in (order if order is not None else range(len(segments))):
        seq, payload = segments[index]
        verdicts.append(judge.judge(Packet.parse(tcp_packet(seq, 0x18, payload, sport)), 0.0))
    return verdicts


def read_hex(name):
    with open(os.path.join(HELLOS, name), encoding="ascii") as handle:
        return bytes.fromhex(handle.read().strip())


def read_datagrams(name):
    with open(os.path.join(HELLOS, name), encoding="ascii") as handle:
        return [(line.split()[0], bytes.fromhex(line.split()[1])) for line in handle if line.strip()]


def fingerprint_self_test():
    failures = []

    def expect(condition, what):
        if not condition:
            failures.append(what)

    default = rules_named("")
    with_pion = rules_named("pion-dtls-client-hello")
    expect([r.name for r in default] == ["openssl-3.0-default", "openssl-dtls-server-flight"],
           f"default rules {[r.name for r in default]}")
    try:
        rules_named("no-such-rule")
        failures.append("an unknown rule name was accepted")
    except ValueError:
        pass
    # 1. Captured TLS hellos: each one's JA4 as issue #21's captures have them, and the verdict.
    cases = [("openssl-3.0.19-s_client-ip.hex", "t13i310900_e8f1e7e78f70_1f22a2ca17c4", "block"),
             ("openssl-3.0.19-s_client-name-alpn.hex", "t13d3111h1_e8f1e7e78f70_1f22a2ca17c4", "block"),
             ("firefox-esr-153.8.0esr-ip.hex", "t13i1616h2_86a278354501_3cbfd9057e0d", "pass"),
             ("firefox-esr-153.8.0esr-localhost.hex", "t13d1617h2_86a278354501_3cbfd9057e0d", "pass")]
    for index, (name, ja4, want) in enumerate(cases):
        stream = read_hex(name)
        verdicts = run_tcp(FingerprintJudge(default), stream, sport=42000 + index)
        last = verdicts[-1]
        expect(last.action == want and last.line is not None and ja4 in last.line,
               f"{name}: want {want} with {ja4}, got {last.action}: {last.line}")
        expect(all(v.action == "pass" and v.line is None for v in verdicts[:-1]),
               f"{name}: a segment before the last decided")
        if want == "block":
            expect(last.rule == "openssl-3.0-default" and last.element == f"tcp . 127.0.0.1 . {42000 + index} . 198.51.100.10 . 443",
                   f"{name}: rule {last.rule}, element {last.element}")
    # Firefox's hello spans two wire segments; out of order, the judge waits for the first.
    firefox = read_hex("firefox-esr-153.8.0esr-ip.hex")
    expect(len(firefox) > 1448, f"the Firefox hello fits one segment ({len(firefox)} bytes)")
    reordered = run_tcp(FingerprintJudge(default), firefox, order=[1, 0])
    expect(reordered[0].line is None and reordered[1].action == "pass" and "86a278354501" in (reordered[1].line or ""),
           "Firefox's hello out of order")
    # The OpenSSL hello, in 100-byte segments, the last two swapped: blocked on the last to come.
    openssl_hello = read_hex("openssl-3.0.19-s_client-ip.hex")
    pieces = run_tcp(FingerprintJudge(default), openssl_hello, order=[0, 2, 1], mss=100)
    expect([v.action for v in pieces] == ["pass", "pass", "block"], f"segmented OpenSSL hello: {[v.action for v in pieces]}")
    # A hello split into two TLS records (allowed, and used by some clients to evade censors).
    split = run_tcp(FingerprintJudge(default), tls_records(openssl_hello[5:], size=50))
    expect(split[-1].action == "block", f"OpenSSL hello in 50-byte records: {split[-1].action}")
    # Later packets of a blocked flow are dropped; a new SYN on the same ports starts afresh.
    judge = FingerprintJudge(default)
    run_tcp(judge, openssl_hello)
    after = judge.judge(Packet.parse(tcp_packet(1001 + len(openssl_hello), 0x18, b"x")), 1.0)
    expect(after.action == "drop", f"a blocked flow's next packet: {after.action}")
    again = run_tcp(judge, firefox)
    expect(again[-1].action == "pass", "a new flow on a blocked flow's ports")
    # 2. Chrome, built from the capture's recorded fields: its JA4 is the capture's; it passes.
    chrome = tls_records(chrome_hello())
    verdict = run_tcp(FingerprintJudge(default), chrome)[-1]
    expect(verdict.action == "pass" and "t13d1517h2_8daaf6152771_cb7bf5808d99" in (verdict.line or ""),
           f"Chrome hello: {verdict.action} {verdict.line}")
    # 3. Not TLS: decided on the first bytes, never held.
    rng = random.Random(21)
    for payload, what in ((bytes(rng.getrandbits(8) for _ in range(600)), "random bytes (obfs4)"),
                          (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP"), (b"\x16\x03\x07", "TLS 3.7 record")):
        verdict = run_tcp(FingerprintJudge(default), payload)[0]
        expect(verdict.action == "pass" and verdict.line is not None, f"{what}: {verdict.action} {verdict.line}")
    # A flow whose SYN the judge never saw (it began before the censor) passes.
    verdict = FingerprintJudge(default).judge(Packet.parse(tcp_packet(5, 0x18, openssl_hello)), 0.0)
    expect(verdict.action == "pass" and "before the censor" in (verdict.line or ""), "an unseen flow")
    # A handshake message that outgrows the stream cap passes; so does one over the message cap.
    big = b"\x01" + (16384).to_bytes(3, "big") + bytes(16384)
    verdicts = run_tcp(FingerprintJudge(default), tls_records(big, size=16000))
    expect(verdicts[-1].action == "pass" and "no whole hello" in (verdicts[-1].line or ""),
           f"over the stream cap: {verdicts[-1].line}")
    huge = b"\x16\x03\x01\x40\x00\x01\xff\xff\xff" + bytes(100)
    verdict = run_tcp(FingerprintJudge(default), huge)[0]
    expect(verdict.action == "pass" and "malformed" in (verdict.line or ""), f"a 16 MiB message: {verdict.line}")
    # A stalled hello (never completed) passes after the judge's deadline.
    judge = FingerprintJudge(default)
    run_tcp(judge, openssl_hello[:100])
    expect(judge.prune(FingerprintJudge.UNDECIDED_SECONDS + 1) == 1, "a stalled hello was not timed out")
    expect(judge.judge(Packet.parse(tcp_packet(1101, 0x18, openssl_hello[100:])), 12.0).action == "pass",
           "a timed-out flow's later packet")
    # 4. DTLS: OpenSSL's server flight (captured from s_server -dtls1_2 -use_srtp -verify, in four
    #    datagrams, its handshake messages fragmented across them) is blocked on the datagram
    #    that completes the CertificateRequest, not before; the client's hello passes.
    proxy, snowflake_client = (b"\x7f\0\0\1", 50000), (b"\x7f\0\0\1", 50001)
    flight = read_datagrams("openssl-3.0.19-dtls-server.txt")
    for order_name, datagrams in (("in order", flight), ("server datagrams reversed", [d for d in flight if d[0] == "c>s"][:2]
                                  + [d for d in reversed(flight) if d[0] == "s>c"])):
        judge = FingerprintJudge(default)
        actions = []
        for direction, payload in datagrams:
            src, dst = (snowflake_client, proxy) if direction == "s>c" else (proxy, snowflake_client)
            verdict = judge.judge(Packet.parse(udp_packet(src, dst, payload)), 0.0)
            actions.append(verdict.action)
            if verdict.action == "block":
                expect(verdict.rule == "openssl-dtls-server-flight" and "dd20400_c02b_6bf46c830e02" in verdict.line,
                       f"DTLS flight {order_name}: {verdict.line}")
                break
        expect("block" in actions and actions.index("block") >= 3,
               f"DTLS flight {order_name}: {actions}")
    # 5. pion's ClientHello: its JA4 is the capture's; passed by default, blocked when asked.
    hello_datagram = dtls_datagram([pion_hello()])
    for rules, want in ((default, "pass"), (with_pion, "block")):
        verdict = FingerprintJudge(rules).judge(Packet.parse(udp_packet(proxy, snowflake_client, hello_datagram)), 0.0)
        expect(verdict.action == want, f"pion hello with {[r.name for r in rules]}: {verdict.action}")
        if want == "block":
            expect("dd2i060600_b94582744588_4bbccbffe950" in verdict.line, f"pion hello: {verdict.line}")
    # The hello in three fragments in separate datagrams, last first: blocked on the last needed.
    message = pion_hello()
    body = message[12:]
    fragments = [message[:1] + message[1:4] + b"\0\0" + offset.to_bytes(3, "big") + len(piece).to_bytes(3, "big") + piece
                 for offset, piece in ((0, body[:40]), (40, body[40:80]), (80, body[80:]))]
    judge = FingerprintJudge(with_pion)
    actions = [judge.judge(Packet.parse(udp_packet(proxy, snowflake_client, dtls_datagram([f]))), 0.0).action
               for f in (fragments[2], fragments[0], fragments[1])]
    expect(actions == ["pass", "pass", "block"], f"fragmented pion hello: {actions}")
    # 6. Hostile input: truncations and byte flips of every sample never raise.
    samples = [read_hex(c[0]) for c in cases] + [chrome]
    dtls_samples = [d for _, d in flight] + [hello_datagram]
    for round_ in range(1500):
        judge = FingerprintJudge(with_pion)
        if round_ % 2:
            data = bytearray(rng.choice(samples))
            data = data[: rng.randrange(1, len(data) + 1)]
            for _ in range(rng.randrange(1, 6)):
                data[rng.randrange(len(data))] = rng.getrandbits(8)
            try:
                run_tcp(judge, bytes(data), mss=rng.choice((7, 300, 1448)))
            except Exception as error:  # noqa: BLE001 - any exception is the failure here
                failures.append(f"TCP sample {round_}: {type(error).__name__}: {error}")
                break
        else:
            data = bytearray(rng.choice(dtls_samples))
            data = data[: rng.randrange(13, len(data) + 1)]
            for _ in range(rng.randrange(1, 6)):
                data[rng.randrange(3, len(data))] = rng.getrandbits(8)
            try:
                judge.judge(Packet.parse(udp_packet(proxy, snowflake_client, bytes(data))), 0.0)
            except Exception as error:  # noqa: BLE001
                failures.append(f"DTLS sample {round_}: {type(error).__name__}: {error}")
                break
    for failure in failures:
        print(f"FAIL {failure}")
    print("fingerprint censor self-test: " + ("ok" if not failures else f"{len(failures)} failed"))
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("fet")
    p.add_argument("--device", required=True)
    p.add_argument("--table", required=True)
    p.add_argument("--probability", type=float, required=True)
    p.add_argument("--block-seconds", type=int, required=True)
    p.add_argument("--seed", type=int)
    p.add_argument("--ready", required=True)
    p = sub.add_parser("judge")
    p.add_argument("payloads", nargs="+")
    p = sub.add_parser("probe")
    p.add_argument("address")
    p.add_argument("port", type=int)
    p.add_argument("payload")
    p.add_argument("--timeout", type=float, default=3.0)
    p = sub.add_parser("byte-server")
    p.add_argument("address")
    p.add_argument("port", type=int)
    p.add_argument("size", type=int)
    p.add_argument("--lifetime", type=float, default=120)
    p = sub.add_parser("byte-probe")
    p.add_argument("address")
    p.add_argument("port", type=int)
    p.add_argument("idle", type=float)
    p = sub.add_parser("connect-burst")
    p.add_argument("address")
    p.add_argument("port", type=int)
    p.add_argument("count", type=int)
    p.add_argument("timeout", type=float)
    sub.add_parser("self-test")
    p = sub.add_parser("stats")
    p.add_argument("--censor", required=True)
    p.add_argument("--judge")
    p.add_argument("--base")
    p.add_argument("--names", default="")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("fingerprint")
    p.add_argument("--device", required=True)
    p.add_argument("--table", required=True)
    p.add_argument("--rules", default="", help="optional rules to add to the default ones (comma-separated)")
    p.add_argument("--block-seconds", type=int, required=True)
    p.add_argument("--ready", required=True)
    sub.add_parser("fingerprint-self-test")
    args = parser.parse_args()
    if args.command == "fet":
        fet(args)
    elif args.command == "judge":
        for payload in args.payloads:
            print(exemption(bytes.fromhex(payload)) or "fully-encrypted")
    elif args.command == "probe":
        return probe(args)
    elif args.command == "byte-server":
        byte_server(args)
    elif args.command == "byte-probe":
        return byte_probe(args)
    elif args.command == "connect-burst":
        return connect_burst(args)
    elif args.command == "stats":
        return stats_command(args)
    elif args.command == "self-test":
        return self_test()
    elif args.command == "fingerprint":
        fingerprint(args)
    elif args.command == "fingerprint-self-test":
        return fingerprint_self_test()
    return 0


if __name__ == "__main__":
    sys.exit(main())
