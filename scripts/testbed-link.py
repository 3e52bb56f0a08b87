#!/usr/bin/env python3
"""Link profiles for the test bed: a userspace netem (this kernel has no netem qdisc).

The client's packets on each path (client <-> relays and authority, <-> each bridge, <-> the
snowflake broker and STUN, <-> snowflake proxies over UDP) are steered by nftables in the test bed's
namespace (scripts/testbed-link) to a TUN device per path and direction: an `ip` route chain marks
them, a `netdev` egress chain on `lo` forwards marked packets to the device. This program reads
each device, delays (with jitter), drops and paces the packets, and writes them back into the same
device, where the kernel receives them as if they came off a wire and delivers them locally.

  testbed-link.py forward --config FILE --ready FILE   the forwarder (SIGHUP re-reads FILE)
  testbed-link.py config PROFILE DEVICES_JSON           prints the forwarder config of a profile
  testbed-link.py profiles                              prints the profile table (JSON)
  testbed-link.py probe-server ADDR...                  UDP echo servers (run with the network gid)
  testbed-link.py measure --targets JSON --expect PROFILE [--paths P,...]
                                                        measures RTT, loss and rate of each path
  testbed-link.py self-test                             the link model on synthetic packets

A link is a FIFO with a byte-limited queue (tail drop) in front of a serializer at `rate`, then a
delay line of `delay +- jitter` that never reorders (a packet leaves no earlier than the one before
it: TCP on a real mobile path sees jitter, not a reshuffle), with independent random loss before
the queue. Both directions are shaped alike; RTT = 2 * delay. Only the standard library is used.
"""

import argparse
import collections
import errno
import heapq
import json
import os
import random
import select
import signal
import socket
import struct
import sys
import time

from testbed_tun import close_inherited_descriptors, ip_packet, open_tun

PATHS = ["tor", "vanilla", "obfs4", "webtunnel", "broker", "webrtc"]

# Profile: a default link for every path, then per-path overrides. rtt_ms and jitter_ms are round
# trip (each direction gets half), loss is per packet and per direction, rate is per direction.
PROFILES = {
    "good": {"default": {"rtt_ms": 30, "jitter_ms": 4, "loss": 0.0, "rate_kbit": 20000}},
    "mobile": {"default": {"rtt_ms": 150, "jitter_ms": 30, "loss": 0.01, "rate_kbit": 5000}},
    "satellite": {"default": {"rtt_ms": 600, "jitter_ms": 20, "loss": 0.005, "rate_kbit": 2000}},
    "throttle-obfs4": {"default": {"rtt_ms": 30, "jitter_ms": 4, "loss": 0.0, "rate_kbit": 20000},
                       "obfs4": {"rate_kbit": 256}},
    "lossy-snowflake": {"default": {"rtt_ms": 30, "jitter_ms": 4, "loss": 0.0, "rate_kbit": 20000},
                        "webrtc": {"loss": 0.05}},
}
# Only for measuring the forwarder itself (docs/TESTBED.md): no delay, no loss, no rate limit.
HIDDEN_PROFILES = {"unshaped": {"default": {"rtt_ms": 0, "jitter_ms": 0, "loss": 0.0, "rate_kbit": 0}}}


def path_spec(profile, path):
    table = PROFILES.get(profile) or HIDDEN_PROFILES.get(profile)
    if table is None:
        raise KeyError(profile)
    spec = dict(table["default"])
    spec.update(table.get(path, {}))
    return spec


# ---------------------------------------------------------------------------------------------
# Forwarder

class Link:
    def __init__(self, fd, name):
        self.fd = fd
        self.name = name
        self.set_spec({"rtt_ms": 0, "jitter_ms": 0, "loss": 0.0, "rate_kbit": 0})
        self.link_free = 0.0        # when the serializer is idle again
        self.last_delivery = 0.0    # delivery time of the previous packet: no reordering
        self.backlog = collections.deque()  # (time the packet has left the serializer, bytes)
        self.backlog_bytes = 0
        self.stats = collections.Counter()

    def set_spec(self, spec):
        self.delay = spec["rtt_ms"] / 2000.0
        self.jitter = spec["jitter_ms"] / 2000.0
        self.loss = float(spec["loss"])
        self.rate = spec["rate_kbit"] * 1000.0 / 8.0  # bytes per second, 0 = unlimited
        # Queue: 200 ms at the link's rate, at least 16 KiB (about ten full-size packets).
        self.queue_limit = max(16384, int(self.rate * 0.2)) if self.rate else 0

    def admit(self, now, size, rng):
        """Delivery time of a packet of `size` bytes arriving now, or None if it is dropped."""
        if self.loss and rng.random() < self.loss:
            self.stats["lost"] += 1
            return None
        departure = now
        if self.rate:
            while self.backlog and self.backlog[0][0] <= now:
                self.backlog_bytes -= self.backlog.popleft()[1]
            if self.backlog_bytes + size > self.queue_limit:
                self.stats["queue-full"] += 1
                return None
            departure = max(now, self.link_free) + size / self.rate
            self.link_free = departure
            self.backlog.append((departure, size))
            self.backlog_bytes += size
        delay = self.delay + (rng.uniform(-self.jitter, self.jitter) if self.jitter else 0.0)
        delivery = max(departure + max(delay, 0.0), self.last_delivery)
        self.last_delivery = delivery
        self.stats["passed"] += 1
        return delivery


def load_config(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def unblock_signals():
    """Children of the Swift test process inherit its blocked signal mask: without this, TERM
    (stop) and HUP (new profile) would never arrive."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGHUP})


def forward(args):
    close_inherited_descriptors()
    unblock_signals()
    config = load_config(args.config)
    rng = random.Random()
    links = {}
    for entry in config["links"]:
        links[entry["device"]] = Link(open_tun(entry["device"]), entry["device"])
        links[entry["device"]].set_spec(entry)
    by_fd = {link.fd: link for link in links.values()}
    reload_wanted = [False]
    stop = [False]
    signal.signal(signal.SIGHUP, lambda *_: reload_wanted.__setitem__(0, True))
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    signal.signal(signal.SIGINT, lambda *_: stop.__setitem__(0, True))
    poller = select.epoll()
    for fd in by_fd:
        poller.register(fd, select.EPOLLIN)
    heap = []
    sequence = 0
    with open(args.ready + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(f"{os.getpid()}\n")
    os.replace(args.ready + ".tmp", args.ready)
    last_stats = time.monotonic()
    while not stop[0]:
        if reload_wanted[0]:
            reload_wanted[0] = False
            try:
                for entry in load_config(args.config)["links"]:
                    if entry["device"] in links:
                        links[entry["device"]].set_spec(entry)
                print(f"profile {load_config(args.config).get('profile')} applied", flush=True)
            except (OSError, ValueError, KeyError) as error:
                print(f"reload failed, profile unchanged: {error}", flush=True)
        now = time.monotonic()
        timeout = max(0.0, heap[0][0] - now) if heap else 1.0
        try:
            events = poller.poll(min(timeout, 1.0))
        except InterruptedError:
            continue
        now = time.monotonic()
        for fd, _ in events:
            link = by_fd[fd]
            for _ in range(256):  # bounded, so that one busy link cannot starve the delay line
                try:
                    frame = os.read(fd, 65600)
                except BlockingIOError:
                    break
                packet = ip_packet(frame)
                if packet is None:
                    continue
                delivery = link.admit(now, len(packet), rng)
                if delivery is not None:
                    sequence += 1
                    heapq.heappush(heap, (delivery, sequence, fd, packet))
        now = time.monotonic()
        # Half a millisecond early rather than late: poll's timeout is rounded up to whole
        # milliseconds, and a consistently late release would bias every RTT upwards.
        while heap and heap[0][0] <= now + 0.0005:
            _, _, fd, packet = heapq.heappop(heap)
            try:
                os.write(fd, packet)
            except OSError as error:
                by_fd[fd].stats[f"write-{errno.errorcode.get(error.errno, error.errno)}"] += 1
        if now - last_stats > 10:
            last_stats = now
            write_stats(args.ready + ".stats", links)
    write_stats(args.ready + ".stats", links)


def write_stats(path, links):
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump({name: dict(link.stats) for name, link in links.items()}, handle, sort_keys=True)
    os.replace(path + ".tmp", path)


def make_config(args):
    devices = json.loads(args.devices)  # {"tor": ["up-device", "down-device"], ...}
    links = []
    for path in PATHS:
        if path not in devices:
            continue
        spec = path_spec(args.profile, path)
        for device in devices[path]:
            links.append(dict(spec, device=device, path=path))
    json.dump({"profile": args.profile, "links": links}, sys.stdout, indent=1)
    print()


# ---------------------------------------------------------------------------------------------
# Measurement: UDP echo servers on each path's address (network group), a client that measures.
#
# Datagram: 1 byte kind, 4 bytes session, 4 bytes sequence, 8 bytes send time, padding.
#   'P' probe: echoed as is, and counted by the server for its session.
#   'C' count request: answered with 'c' + session + count of 'P' (and of 'U') received.
#   'B' burst request (+ 4 bytes count, 4 bytes size, 8 bytes pace in bytes/s, 0 = none): the
#       server sends `count` datagrams of `size` bytes ('b' + session + sequence) at that pace.
#   'U' upstream burst datagram: counted, first and last arrival times kept per session.
HEADER = struct.Struct("!cII d")


def probe_server(args):
    close_inherited_descriptors()
    unblock_signals()
    sockets = []
    for address in args.addresses:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        sock.bind((address, 0))
        sockets.append(sock)
    print(json.dumps({address: sock.getsockname()[1] for address, sock in zip(args.addresses, sockets)}), flush=True)
    counts = collections.Counter()
    upstream = {}
    deadline = time.monotonic() + args.lifetime
    while time.monotonic() < deadline:
        readable, _, _ = select.select(sockets, [], [], 1.0)
        for sock in readable:
            data, peer = sock.recvfrom(65535)
            if len(data) < HEADER.size:
                continue
            kind, session, sequence, _ = HEADER.unpack_from(data)
            if kind == b"P":
                counts[session] += 1
                sock.sendto(data, peer)
            elif kind == b"U":
                now = time.monotonic()
                first, _, received = upstream.get(session, (now, now, 0))
                upstream[session] = (first, now, received + len(data) + 28)
                counts[("U", session)] += 1
            elif kind == b"C":
                first, last, received = upstream.get(session, (0.0, 0.0, 0))
                reply = HEADER.pack(b"c", session, 0, 0.0) + struct.pack(
                    "!IIdd", counts[session], counts[("U", session)], last - first, float(received))
                sock.sendto(reply, peer)
            elif kind == b"B" and len(data) >= HEADER.size + 16:
                count, size, pace = struct.unpack_from("!IId", data, HEADER.size)
                count, size = min(count, 20000), max(HEADER.size, min(size, 1400))
                send_paced(lambda index: sock.sendto(HEADER.pack(b"b", session, index, 0.0)
                                                     + b"\0" * (size - HEADER.size), peer),
                           count, size + 28, min(pace, 1e9))


def send_paced(send, count, wire_size, pace):
    """Sends `count` datagrams at `pace` bytes/s (0: as fast as the socket takes them), so that a
    rate measurement keeps the link's queue full for the whole burst, not only its first 200 ms."""
    start = time.monotonic()
    for index in range(count):
        if pace:
            due = start + index * wire_size / pace
            delay = due - time.monotonic()
            if delay > 0.002:
                time.sleep(delay)
        try:
            send(index)
        except (BlockingIOError, ConnectionRefusedError):
            time.sleep(0.001)


class Probe:
    def __init__(self, address, port):
        self.target = (address, port)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock.connect(self.target)
        self.session = random.getrandbits(32)

    def receive(self, until):
        while True:
            left = until - time.monotonic()
            if left <= 0:
                return None
            readable, _, _ = select.select([self.sock], [], [], left)
            if readable:
                try:
                    return self.sock.recv(65535), time.monotonic()
                except ConnectionRefusedError:
                    continue

    def rtt(self, count, interval, settle):
        sent = {}
        rtts = []
        start = time.monotonic()
        for index in range(count):
            while time.monotonic() < start + index * interval:
                got = self.receive(start + index * interval)
                if got:
                    self._take_rtt(got, sent, rtts)
            sent[index] = time.monotonic()
            self.sock.send(HEADER.pack(b"P", self.session, index, 0.0))
        end = time.monotonic() + settle
        while len(rtts) < count:
            got = self.receive(end)
            if not got:
                break
            self._take_rtt(got, sent, rtts)
        return rtts

    def _take_rtt(self, got, sent, rtts):
        data, arrived = got
        kind, session, sequence, _ = HEADER.unpack_from(data)
        if kind == b"P" and session == self.session and sequence in sent:
            rtts.append(arrived - sent.pop(sequence))

    def counts(self, settle):
        """(probes the server got, upstream burst datagrams, upstream span, upstream bytes)."""
        for _ in range(20):
            self.sock.send(HEADER.pack(b"C", self.session, 0, 0.0))
            end = time.monotonic() + settle
            while True:
                got = self.receive(end)
                if not got:
                    break
                data, _ = got
                if data[:1] == b"c":
                    return struct.unpack_from("!IIdd", data, HEADER.size)
        raise RuntimeError("the probe server never answered a count request")


def measure_path(path, probe, spec, loss_samples):
    rtt_expected = spec["rtt_ms"] / 1000.0
    settle = rtt_expected * 2 + spec["jitter_ms"] / 1000.0 + 1.0
    result = {"path": path}
    # 1. RTT: 100 spaced probes.
    rtts = probe.rtt(100, 0.01, settle)
    result["rtt_ms"] = round(1000 * sum(rtts) / len(rtts), 1) if rtts else None
    result["rtt_min_ms"] = round(1000 * min(rtts), 1) if rtts else None
    result["rtt_max_ms"] = round(1000 * max(rtts), 1) if rtts else None
    # 2. Loss, per direction: many small probes at a third of the link's rate (none queue-dropped).
    probe.session = random.getrandbits(32)
    datagram = HEADER.size + 28
    rate = spec["rate_kbit"] * 125.0 or 1e9
    interval = max(datagram / (rate / 3), 1 / 5000)
    received = probe.rtt(loss_samples, interval, settle)
    server_got, _, _, _ = probe.counts(settle)
    result["loss_up"] = round(1 - server_got / loss_samples, 5)
    result["loss_down"] = round(1 - len(received) / server_got, 5) if server_got else None
    # Both directions pooled: what the check judges (twice the samples of one direction).
    lost = (loss_samples - server_got) + (server_got - len(received))
    result["loss"] = round(lost / (loss_samples + server_got), 5)
    result["loss_samples"] = loss_samples
    # 3. Rate: downstream, a burst from the server of ~1.5 s at the expected rate (at least 200
    #    datagrams), sent at 1.5 times that rate; upstream, the same burst from us. Rate = bytes
    #    after the first datagram / time from the first to the last arrival.
    size = 1200
    burst = int(max(200, min(20000, rate * 1.5 / (size + 28)))) if spec["rate_kbit"] else 5000
    probe.session = random.getrandbits(32)
    pace = rate * 1.5 if spec["rate_kbit"] else 0.0
    first = last = None
    got_bytes = 0
    # The request is one datagram on a link that drops some (1 % each way under `mobile`): when no
    # burst datagram has come within `settle`, it is sent again (a lost request once made the
    # check report "rate_down_kbit not measured" about one run in thirty).
    for _ in range(5):
        probe.sock.send(HEADER.pack(b"B", probe.session, 0, 0.0) + struct.pack("!IId", burst, size, pace))
        end = time.monotonic() + settle + burst * (size + 28) / rate * 3
        wait_first = time.monotonic() + settle
        while True:
            got = probe.receive(min(end, last + 1.0) if last is not None else wait_first)
            if not got:
                break
            data, arrived = got
            if data[:1] != b"b":
                continue
            if first is None:
                first = arrived
            else:
                got_bytes += len(data) + 28
            last = arrived
        if first is not None:
            break
    result["rate_down_kbit"] = round(got_bytes * 8 / (last - first) / 1000, 1) if first and last > first else None
    probe.session = random.getrandbits(32)
    padding = b"\0" * (size - HEADER.size)
    session = probe.session
    send_paced(lambda index: probe.sock.send(HEADER.pack(b"U", session, index, 0.0) + padding), burst, size + 28, pace)
    time.sleep(settle)
    _, count, span, bytes_up = probe.counts(settle)
    per_datagram = bytes_up / count if count else 0
    result["rate_up_kbit"] = round((bytes_up - per_datagram) * 8 / span / 1000, 1) if span > 0 else None
    return result


def judge(result, spec, tolerance):
    """Every figure more than `tolerance` (relative) off the profile is named. Loss is judged on
    both directions pooled (the per-direction figures are reported); loss expected to be zero must
    be below 0.1 %, a fixed floor, and RTT within 3 ms at least (scheduling on a loaded machine)."""
    problems = []

    def off(name, measured, expected, floor=0.0):
        if measured is None:
            problems.append(f"{name} not measured")
        elif abs(measured - expected) > max(tolerance * expected, floor):
            problems.append(f"{name} {measured} vs {expected} expected")

    off("rtt_ms", result["rtt_ms"], spec["rtt_ms"], floor=3.0)
    off("loss", result["loss"], spec["loss"], floor=0.001)
    if spec["rate_kbit"]:
        off("rate_down_kbit", result["rate_down_kbit"], spec["rate_kbit"])
        off("rate_up_kbit", result["rate_up_kbit"], spec["rate_kbit"])
    return problems


def measure(args):
    targets = json.loads(args.targets)  # {"tor": ["127.0.1.1", port], ...}
    paths = args.paths.split(",") if args.paths else [p for p in PATHS if p in targets]
    failures = 0
    report = []
    for path in paths:
        spec = path_spec(args.expect, path)
        address, port = targets[path]
        # Loss: enough samples per direction that 20 % of the expected loss is 2.5 standard
        # deviations (binomial) in one direction, 3.5 for both pooled (what is judged), at most
        # 40000; 3000 when no loss is expected.
        loss = spec["loss"]
        samples = 3000 if not loss else int(min(40000, max(3000, 6.25 * (1 - loss) / (args.tolerance ** 2 * loss))))
        if args.loss_samples:
            samples = args.loss_samples
        result = measure_path(path, Probe(address, port), spec, samples)
        problems = judge(result, spec, args.tolerance)
        result["expected"] = spec
        result["problems"] = problems
        report.append(result)
        failures += bool(problems)
        status = "ok  " if not problems else "FAIL"
        print(f"{status} {path:9} rtt {result['rtt_ms']} ms ({result['rtt_min_ms']}-{result['rtt_max_ms']}), "
              f"loss {100 * result['loss']:.2f}% (up {100 * result['loss_up']:.2f}%, down {100 * (result['loss_down'] or 0):.2f}%, n={samples} each), "
              f"rate down {result['rate_down_kbit']} up {result['rate_up_kbit']} kbit/s"
              f" | expected rtt {spec['rtt_ms']} loss {100 * spec['loss']:.1f}% rate {spec['rate_kbit'] or 'unlimited'}"
              + ("" if not problems else " | " + "; ".join(problems)), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=1)
    return 1 if failures else 0


def self_test():
    """The link model alone, on synthetic arrival times (no devices, no root): what `check`
    measures end to end, here exactly. Exit 1 on the first broken property."""
    failures = []

    def expect(condition, what):
        if not condition:
            failures.append(what)

    rng = random.Random(15)
    # Rate: 1000 packets of 1000 bytes offered at once to 8 Mbit/s (1 MB/s) with a deep queue
    # leave 1 ms apart; the queue (200 ms = 200 kB) takes 200 of them, the rest are tail-dropped.
    link = Link(-1, "rate")
    link.set_spec({"rtt_ms": 0, "jitter_ms": 0, "loss": 0.0, "rate_kbit": 8000})
    times = [link.admit(0.0, 1000, rng) for _ in range(1000)]
    passed = [t for t in times if t is not None]
    expect(len(passed) == 200, f"queue of 200 ms at 1 MB/s took {len(passed)} packets of 1 kB")
    gaps = {round(b - a, 9) for a, b in zip(passed, passed[1:])}
    expect(gaps == {0.001}, f"serialization gaps {sorted(gaps)[:3]}")
    # Delay and jitter: never reordered, never earlier than delay - jitter, mean near the delay.
    link = Link(-1, "delay")
    link.set_spec({"rtt_ms": 150, "jitter_ms": 30, "loss": 0.0, "rate_kbit": 0})
    arrivals = [i * 0.01 for i in range(5000)]
    deliveries = [link.admit(t, 100, rng) for t in arrivals]
    expect(all(b >= a for a, b in zip(deliveries, deliveries[1:])), "a packet overtook another")
    delays = [d - t for d, t in zip(deliveries, arrivals)]
    expect(min(delays) >= 0.075 - 0.015 - 1e-9 and max(delays) <= 0.075 + 0.015 + 1e-9, "delay outside 75 +- 15 ms")
    mean = sum(delays) / len(delays)
    expect(abs(mean - 0.075) < 0.003, f"mean one-way delay {mean * 1000:.1f} ms, 75 expected")
    # Loss: 1 % of 200000 packets, within 5 standard deviations.
    link = Link(-1, "loss")
    link.set_spec({"rtt_ms": 0, "jitter_ms": 0, "loss": 0.01, "rate_kbit": 0})
    lost = sum(link.admit(i * 1e-4, 100, rng) is None for i in range(200000))
    expect(abs(lost - 2000) < 5 * (200000 * 0.01 * 0.99) ** 0.5, f"{lost} of 200000 lost at 1 %")
    # A reload keeps the link's state: the serializer stays busy across a profile change.
    link = Link(-1, "reload")
    link.set_spec({"rtt_ms": 0, "jitter_ms": 0, "loss": 0.0, "rate_kbit": 8})
    first = link.admit(0.0, 1000, rng)
    link.set_spec({"rtt_ms": 0, "jitter_ms": 0, "loss": 0.0, "rate_kbit": 8000})
    second = link.admit(0.0, 1000, rng)
    expect(first == 1.0 and second > first, f"after a reload the next packet left at {second}, before {first}")
    # Frames: lo's Ethernet header is stripped, raw IPv4 kept, anything else ignored.
    ip = bytes([0x45]) + bytes(19)
    expect(ip_packet(bytes(12) + b"\x08\x00" + ip) == ip and ip_packet(ip) == ip, "IPv4 frame not recognised")
    expect(ip_packet(bytes(12) + b"\x86\xdd" + bytes(40)) is None and ip_packet(b"") is None, "non-IPv4 not ignored")
    # Every profile has every path, with sane figures.
    for name in PROFILES:
        for path in PATHS:
            spec = path_spec(name, path)
            expect(spec["rtt_ms"] > 0 and 0 <= spec["loss"] < 0.5 and spec["rate_kbit"] > 0, f"{name}/{path}: {spec}")
    for failure in failures:
        print(f"FAIL {failure}")
    print("link model self-test: " + ("ok" if not failures else f"{len(failures)} failed"))
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("forward")
    p.add_argument("--config", required=True)
    p.add_argument("--ready", required=True)
    p = sub.add_parser("config")
    p.add_argument("profile")
    p.add_argument("devices")
    sub.add_parser("profiles")
    sub.add_parser("self-test")
    p = sub.add_parser("probe-server")
    p.add_argument("addresses", nargs="+")
    p.add_argument("--lifetime", type=float, default=600)
    p = sub.add_parser("measure")
    p.add_argument("--targets", required=True)
    p.add_argument("--expect", required=True)
    p.add_argument("--paths")
    p.add_argument("--tolerance", type=float, default=0.2)
    p.add_argument("--loss-samples", type=int)
    p.add_argument("--json")
    args = parser.parse_args()
    if args.command == "forward":
        forward(args)
    elif args.command == "config":
        try:
            make_config(args)
        except KeyError:
            print(f"unknown profile '{args.profile}' (one of: none {' '.join(PROFILES)})", file=sys.stderr)
            return 64
    elif args.command == "self-test":
        return self_test()
    elif args.command == "profiles":
        print(json.dumps(PROFILES, indent=1))
    elif args.command == "probe-server":
        probe_server(args)
    elif args.command == "measure":
        if args.expect not in PROFILES and args.expect not in HIDDEN_PROFILES:
            print(f"unknown profile '{args.expect}'", file=sys.stderr)
            return 64
        return measure(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
