"""The test bed's fingerprinting censor, its decisions: a blocklist of TLS and DTLS handshakes and
the per-flow state that finds each flow's first handshake in the packets the censor's chain
steers to it (scripts/testbed-censors). No I/O here: scripts/testbed-censor.py reads the packets
from the TUN device, asks a FingerprintJudge what to do with each, and writes back, drops, and
adds blocked flows to nftables. Standard library only; imported from the scripts' own directory.

The blocklist (RULES has each entry's source; docs/TESTBED.md, "The fingerprinting censor"):
  openssl-3.0-default        a TLS ClientHello with OpenSSL 3.0's default cipher list and
                             extension set: JA4 parts b and c e8f1e7e78f70_1f22a2ca17c4, whatever
                             the first part (SNI or not, ALPN or not)
  openssl-dtls-server-flight a DTLS server flight shaped as OpenSSL 3.0 sends it in the WebRTC
                             position (Postern's snowflake client): ServerHello extensions
                             renegotiation_info, ec_point_formats, use_srtp, extended_master_secret;
                             point formats 0,1,2; CertificateRequest types 1,2,64, 20 sigalgs
  pion-dtls-client-hello     pion's DTLS ClientHello (every snowflake proxy's): JA4 parts b and c
                             b94582744588_4bbccbffe950; optional, off unless asked for
"""

import socket
import struct

from tls_fingerprint import (CERTIFICATE_REQUEST, CLIENT_HELLO, SERVER_HELLO, SERVER_HELLO_DONE,
                             DtlsMessages, Malformed, client_hello_fields, extension_map,
                             first_tls_handshake, ja4s, looks_like_dtls_handshake,
                             parse_certificate_request, parse_server_hello, server_flight_signature)

# ---------------------------------------------------------------------------------------------
# The blocklist.
OPENSSL_DEFAULT_CIPHERS = "e8f1e7e78f70"     # JA4 b: OpenSSL 3.0's 31 default suites
OPENSSL_DEFAULT_EXTENSIONS = "1f22a2ca17c4"  # JA4 c: its extensions (sans SNI, ALPN) + 20 sigalgs
OPENSSL_DTLS_SERVER_FLIGHT = (
    "ext=ff01,000b,000e,0017;pf=0,1,2;cr=1,2,64/"
    "0403,0503,0603,0807,0808,0809,080a,080b,0804,0805,0806,0401,0501,0601,0303,0301,0302,0402,0502,0602")
PION_DTLS_CIPHERS = "b94582744588"
PION_DTLS_EXTENSIONS = "4bbccbffe950"


class Rule:
    """One blocklist entry: what it looks at (tls-client-hello, dtls-client-hello,
    dtls-server-flight), a predicate on the fingerprint, and whether the bed enables it."""

    def __init__(self, name, kind, matches, default_on, source):
        self.name, self.kind, self.matches = name, kind, matches
        self.default_on, self.source = default_on, source


def _ja4_parts(ja4):
    parts = ja4.split("_")
    return parts if len(parts) == 3 else ["", "", ""]


RULES = [
    Rule("openssl-3.0-default", "tls-client-hello",
         lambda fp: fp["ja4"].startswith("t")
         and _ja4_parts(fp["ja4"])[1:] == [OPENSSL_DEFAULT_CIPHERS, OPENSSL_DEFAULT_EXTENSIONS],
         True,
         "Postern's broker, AMP cache and webtunnel hellos (issue #21's captures: "
         "t13i3110h1_, t13d311000_...), and `openssl s_client`'s of OpenSSL 3.0.19"),
    Rule("openssl-dtls-server-flight", "dtls-server-flight",
         lambda signature: signature == OPENSSL_DTLS_SERVER_FLIGHT,
         True,
         "Postern's snowflake DTLS server flight (issue #21's captures, postern-1/2; JA4S "
         "dd20400_c02b_6bf46c830e02), the same as `openssl s_server -dtls1_2 -use_srtp -verify`'s"),
    Rule("pion-dtls-client-hello", "dtls-client-hello",
         lambda fp: fp["ja4"].startswith("d")
         and _ja4_parts(fp["ja4"])[1:] == [PION_DTLS_CIPHERS, PION_DTLS_EXTENSIONS],
         False,
         "pion's DTLS ClientHello (issue #21's captures: every snowflake proxy, dd2i060600_...); "
         "the rule Russia applied from 2026-03-30 (net4people/bbs#603)"),
]


def rules_named(names):
    """The rules to apply: the default ones, plus those named (comma-separated) in `names`."""
    wanted = {n for n in names.split(",") if n} if names else set()
    unknown = wanted - {r.name for r in RULES}
    if unknown:
        raise ValueError(f"unknown rule(s): {', '.join(sorted(unknown))}")
    return [r for r in RULES if r.default_on or r.name in wanted]


def first_match(rules, kind, fingerprint):
    for rule in rules:
        if rule.kind == kind and rule.matches(fingerprint):
            return rule.name
    return None


# ---------------------------------------------------------------------------------------------
# Packets.
class Packet:
    """What the judge needs of an IPv4 TCP or UDP packet; None from `parse` for anything else."""

    def __init__(self, protocol, src, dst, sport, dport, seq, flags, payload):
        self.protocol, self.src, self.dst, self.sport, self.dport = protocol, src, dst, sport, dport
        self.seq, self.flags, self.payload = seq, flags, payload

    @staticmethod
    def parse(packet):
        if len(packet) < 20 or packet[0] >> 4 != 4:
            return None
        ihl = (packet[0] & 0x0F) * 4
        total = struct.unpack_from("!H", packet, 2)[0]
        # A GSO packet handed over whole may carry 0 or a short total; trust the buffer then.
        end = total if ihl + 8 <= total <= len(packet) else len(packet)
        if ihl < 20 or end < ihl + 8:
            return None
        protocol = packet[9]
        src, dst = bytes(packet[12:16]), bytes(packet[16:20])
        if protocol == socket.IPPROTO_UDP:
            sport, dport = struct.unpack_from("!HH", packet, ihl)
            return Packet("udp", src, dst, sport, dport, 0, 0, bytes(packet[ihl + 8:end]))
        if protocol != socket.IPPROTO_TCP or end < ihl + 20:
            return None
        sport, dport, seq, _, offset, flags = struct.unpack_from("!HHIIBB", packet, ihl)
        doff = (offset >> 4) * 4
        if doff < 20 or ihl + doff > end:
            return None
        return Packet("tcp", src, dst, sport, dport, seq, flags, bytes(packet[ihl + doff:end]))

    def flow(self):
        return f"{self.protocol} {socket.inet_ntoa(self.src)}:{self.sport} -> {socket.inet_ntoa(self.dst)}:{self.dport}"

    def block_element(self):
        """The nftables set element (l4proto . saddr . sport . daddr . dport) of this packet's
        flow; the censor's rules drop both directions of it."""
        return (f"{self.protocol} . {socket.inet_ntoa(self.src)} . {self.sport} . "
                f"{socket.inet_ntoa(self.dst)} . {self.dport}")


# ---------------------------------------------------------------------------------------------
# Per-flow state.
STREAM_CAP = 16384  # bytes of a TCP flow's start the judge assembles; beyond, it passes the flow


class TcpStart:
    """The first bytes of a TCP flow, from its SYN's sequence number, assembled from segments in
    any order: `data` is what is contiguous from the start, `ahead` the segments past a hole
    (kept until the hole fills; a duplicate or overlap is resolved by the bytes already held).
    At most STREAM_CAP bytes in each."""

    def __init__(self, isn):
        self.isn = isn
        self.data = b""
        self.ahead = {}  # offset -> bytes

    def add(self, seq, payload):
        offset = (seq - self.isn - 1) & 0xFFFFFFFF
        if offset >= STREAM_CAP or not payload:
            return
        payload = payload[: STREAM_CAP - offset]
        if offset > len(self.data):
            held = sum(len(p) for p in self.ahead.values()) - len(self.ahead.get(offset, b""))
            if len(payload) > len(self.ahead.get(offset, b"")) and held + len(payload) <= STREAM_CAP:
                self.ahead[offset] = payload
            return  # else dropped from the judge's view: the sender retransmits what is missed
        self._extend(offset, payload)
        while True:
            fits = [o for o in self.ahead if o <= len(self.data)]
            if not fits:
                return
            for o in fits:
                self._extend(o, self.ahead.pop(o))

    def _extend(self, offset, payload):
        if offset + len(payload) > len(self.data):
            self.data += payload[len(self.data) - offset:]

    def contiguous(self):
        return self.data


class DtlsFlow:
    """Both directions of a UDP flow's plaintext DTLS handshake, by sender (the flow's key is its
    two endpoints, so there are at most two)."""

    def __init__(self):
        self.messages = {}  # (address, port) -> DtlsMessages
        self.hello_judged = set()

    def of(self, sender):
        return self.messages.setdefault(sender, DtlsMessages())


class Verdict:
    """What to do with one packet: `action` pass / drop / block (drop, then add `element` to the
    block set); `line` a log line when the flow was decided (or skipped) by this packet; `rule`
    the matched rule of a block; `counter` the statistics key to count."""

    def __init__(self, action, line=None, rule=None, counter=None, element=None):
        self.action, self.line, self.rule, self.counter, self.element = action, line, rule, counter, element


class FingerprintJudge:
    """Keeps each flow's verdict and the state of undecided ones. `judge(packet, now)` for every
    packet the chain steers: a client's TCP SYNs and data packets, every UDP datagram that starts
    with a DTLS handshake record. A flow whose SYN the judge did not see (older than the censor)
    is passed."""

    FLOW_IDLE_SECONDS = 600
    FLOW_LIMIT = 65536
    UNDECIDED_SECONDS = 10  # a flow's handshake must be whole within this; else it passes

    def __init__(self, rules):
        self.rules = rules
        self.verdicts = {}   # flow key -> [passed?, last packet time]
        self.pending = {}    # flow key -> [TcpStart or DtlsFlow, first packet time]

    @staticmethod
    def key(packet):
        if packet.protocol == "tcp":
            return ("tcp", packet.src, packet.sport, packet.dst, packet.dport)
        ends = sorted([(packet.src, packet.sport), (packet.dst, packet.dport)])
        return ("udp", ends[0], ends[1])

    def prune(self, now):
        for key in [k for k, v in self.verdicts.items() if now - v[1] > self.FLOW_IDLE_SECONDS]:
            del self.verdicts[key]
        expired = [k for k, v in self.pending.items() if now - v[1] > self.UNDECIDED_SECONDS]
        for key in expired:
            del self.pending[key]
            self._decide(key, True, now)
        return len(expired)

    def _decide(self, key, passed, now):
        self.pending.pop(key, None)
        if len(self.verdicts) >= self.FLOW_LIMIT:
            del self.verdicts[min(self.verdicts, key=lambda k: self.verdicts[k][1])]
        self.verdicts[key] = [passed, now]

    def judge(self, packet, now):
        key = self.key(packet)
        if packet.protocol == "tcp" and packet.flags & 0x12 == 0x02:
            # A client's SYN: a new flow on these four values, whatever an earlier one did.
            self.verdicts.pop(key, None)
            if len(self.pending) >= self.FLOW_LIMIT:
                del self.pending[min(self.pending, key=lambda k: self.pending[k][1])]
            self.pending[key] = [TcpStart(packet.seq), now]
            return Verdict("pass")
        verdict = self.verdicts.get(key)
        if verdict is not None:
            verdict[1] = now
            return Verdict("pass") if verdict[0] else Verdict("drop", counter="dropped_after")
        if packet.protocol == "tcp":
            return self._judge_tcp(key, packet, now)
        return self._judge_udp(key, packet, now)

    def _pass(self, key, now, line, counter):
        self._decide(key, True, now)
        return Verdict("pass", line=line, counter=counter)

    def _block(self, key, now, packet, rule, detail):
        self._decide(key, False, now)
        return Verdict("block", line=f"block {packet.flow()}: {rule} ({detail})", rule=rule,
                       element=packet.block_element())

    def _judge_tcp(self, key, packet, now):
        state = self.pending.get(key)
        if state is None:
            return self._pass(key, now, f"pass {packet.flow()}: began before the censor (no SYN seen)", "unseen_start")
        start = state[0]
        start.add(packet.seq, packet.payload)
        stream = start.contiguous()
        try:
            status, message = first_tls_handshake(stream)
        except Malformed as error:
            return self._pass(key, now, f"pass {packet.flow()}: malformed TLS ({error})", "malformed")
        if status == "not-tls":
            return self._pass(key, now, f"pass {packet.flow()}: not TLS ({stream[:3].hex()})", "not_tls")
        if status == "more":
            if len(stream) >= STREAM_CAP:
                return self._pass(key, now, f"pass {packet.flow()}: no whole hello in {STREAM_CAP} bytes", "over_cap")
            return Verdict("pass")
        message_type, body = message
        if message_type != CLIENT_HELLO:
            return self._pass(key, now, f"pass {packet.flow()}: first handshake message type {message_type}", "not_hello")
        try:
            fp = client_hello_fields(body)
        except Malformed as error:
            return self._pass(key, now, f"pass {packet.flow()}: malformed ClientHello ({error})", "malformed")
        detail = f"ja4 {fp['ja4']} ja3 {fp['ja3']}, {len(stream)} bytes assembled"
        rule = first_match(self.rules, "tls-client-hello", fp)
        if rule is not None:
            return self._block(key, now, packet, rule, detail)
        return self._pass(key, now, f"pass {packet.flow()}: ClientHello {detail}", "passed_hello")

    def _judge_udp(self, key, packet, now):
        if not looks_like_dtls_handshake(packet.payload):
            return Verdict("pass")
        state = self.pending.get(key)
        if state is None:
            if len(self.pending) >= self.FLOW_LIMIT:
                del self.pending[min(self.pending, key=lambda k: self.pending[k][1])]
            state = self.pending[key] = [DtlsFlow(), now]
        flow = state[0]
        sender = (packet.src, packet.sport)
        try:
            messages = flow.of(sender)
            messages.add_datagram(packet.payload)
            hello = messages.first_of_type(CLIENT_HELLO)
            if hello is not None and sender not in flow.hello_judged:
                flow.hello_judged.add(sender)
                fp = client_hello_fields(hello, dtls=True)
                rule = first_match(self.rules, "dtls-client-hello", fp)
                if rule is not None:
                    return self._block(key, now, packet, rule, f"ja4 {fp['ja4']} ja3 {fp['ja3']}")
            server_hello = messages.first_of_type(SERVER_HELLO)
            if server_hello is None:
                return Verdict("pass")
            parsed = parse_server_hello(server_hello)
            supported = extension_map(parsed.extensions).get(43)
            if supported == b"\xfe\xfc":
                # DTLS 1.3: the rest of the flight is encrypted; the ServerHello is all there is.
                signature = server_flight_signature(parsed, None) + ";dtls1.3"
            else:
                request = messages.first_of_type(CERTIFICATE_REQUEST)
                if request is None and not messages.has_type(SERVER_HELLO_DONE):
                    return Verdict("pass")
                signature = server_flight_signature(
                    parsed, parse_certificate_request(request) if request is not None else None)
        except Malformed as error:
            return self._pass(key, now, f"pass {packet.flow()}: malformed DTLS ({error})", "malformed")
        detail = f"ja4s {ja4s(parsed, 'd')}, {signature}"
        rule = first_match(self.rules, "dtls-server-flight", signature)
        if rule is not None:
            return self._block(key, now, packet, rule, detail)
        return self._pass(key, now, f"pass {packet.flow()}: DTLS server flight {detail}", "passed_flight")
