#!/usr/bin/env python3
"""JA4 / JA3 / field dump for TLS and DTLS ClientHellos (own implementation of the public JA4 definition).
Input: a pcap; uses tshark only to pull raw TCP/UDP payloads."""
import os, subprocess, sys, struct, json

# The parsing and the fingerprints live in scripts/tls_fingerprint.py, shared with the test bed's
# fingerprinting censor (scripts/testbed-censor.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tls_fingerprint import fields, parse_hello  # noqa: E402

def hellos_from_pcap(path):
    out = subprocess.run(['tshark', '-r', path, '-Y', 'tls.handshake.type==1 || dtls.handshake.type==1', '-T', 'fields',
                          '-e', 'tcp.payload', '-e', 'udp.payload', '-e', 'tls.handshake.ja3', '-e', 'dtls.handshake.ja3',
                          '-e', 'tcp.srcport', '-e', 'tcp.dstport'], capture_output=True, text=True).stdout
    res = []
    for line in out.splitlines():
        parts = line.split('\t')
        tcp, udp = parts[0], parts[1]
        raw = bytes.fromhex((tcp or udp).split(',')[0])
        if tcp:
            # TLS record(s): take handshake bytes across records
            hs = b''; q = 0
            while q + 5 <= len(raw) and raw[q] == 22:
                l = struct.unpack_from('>H', raw, q + 3)[0]; hs += raw[q + 5:q + 5 + l]; q += 5 + l
            if not hs or hs[0] != 1: continue
            ln = int.from_bytes(hs[1:4], 'big'); body = hs[4:4 + ln]
            d = fields(*parse_hello(body), proto='t')
        else:
            q = 0; d = None
            while q + 13 <= len(raw):
                ct = raw[q]; l = struct.unpack_from('>H', raw, q + 11)[0]; rec = raw[q + 13:q + 13 + l]; q += 13 + l
                if ct == 22 and rec[0] == 1:
                    ln = int.from_bytes(rec[1:4], 'big'); body = rec[12:12 + ln]
                    d = fields(*parse_hello(body, dtls=True), proto='d'); break
            if d is None: continue
        d['tshark_ja3'] = parts[2] or parts[3]
        res.append(d)
    return res

if __name__ == '__main__':
    for d in hellos_from_pcap(sys.argv[1]):
        print(json.dumps(d) if '-j' in sys.argv else '\n'.join('%s: %s' % kv for kv in d.items()) + '\n')
