#!/usr/bin/env python3
"""The test bed's DNS server: the exits' only resolver (their ServerDNSResolvConfFile names it).

It knows the test bed's own names and nothing else: A queries for them get their 127.x address,
every other query gets NXDOMAIN (AAAA and other types for known names: no data). So a client can
reach a test service by name with remote DNS (socks5h), resolved at the exit, while no lookup can
ever go beyond loopback.

    testbed-dns.py ADDRESS PORT NAME=IPV4 [NAME=IPV4 ...]
"""
import socket
import struct
import sys


def parse_question(packet):
    """Returns (id, flags, qname, qtype, end of question) or None for a packet we do not answer."""
    if len(packet) < 12:
        return None
    ident, flags, qdcount = struct.unpack("!HHH", packet[:6])
    if flags & 0x8000 or qdcount != 1:
        return None
    labels, offset = [], 12
    while True:
        if offset >= len(packet):
            return None
        length = packet[offset]
        offset += 1
        if length == 0:
            break
        if length & 0xC0 or offset + length > len(packet):
            return None
        labels.append(packet[offset:offset + length].decode("ascii", "replace").lower())
        offset += length
    if offset + 4 > len(packet):
        return None
    qtype, _qclass = struct.unpack("!HH", packet[offset:offset + 4])
    return ident, flags, ".".join(labels), qtype, offset + 4


def answer(packet, names):
    parsed = parse_question(packet)
    if parsed is None:
        return None
    ident, flags, qname, qtype, end = parsed
    question = packet[12:end]
    recursion_desired = flags & 0x0100
    if qname not in names:
        header = struct.pack("!HHHHHH", ident, 0x8400 | recursion_desired | 3, 1, 0, 0, 0)
        return header + question
    records = b""
    count = 0
    if qtype in (1, 255):  # A or ANY
        records = struct.pack("!HHHIH", 0xC00C, 1, 1, 60, 4) + socket.inet_aton(names[qname])
        count = 1
    header = struct.pack("!HHHHHH", ident, 0x8400 | recursion_desired, 1, count, 0, 0)
    return header + question + records


def main():
    if len(sys.argv) < 4:
        sys.stderr.write(__doc__)
        return 64
    address, port = sys.argv[1], int(sys.argv[2])
    names = {}
    for item in sys.argv[3:]:
        name, _, ip = item.partition("=")
        socket.inet_aton(ip)
        names[name.lower().rstrip(".")] = ip
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind((address, port))
    while True:
        packet, peer = server.recvfrom(4096)
        reply = answer(packet, names)
        if reply is not None:
            server.sendto(reply, peer)


if __name__ == "__main__":
    sys.exit(main())
