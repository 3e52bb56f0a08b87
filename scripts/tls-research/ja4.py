#!/usr/bin/env python3
"""JA4 / JA3 / field dump for TLS and DTLS ClientHellos (own implementation of the public JA4 definition).
Input: a pcap; uses tshark only to pull raw TCP/UDP payloads."""
import hashlib, subprocess, sys, struct, json

GREASE = {0x0a0a + 0x1010 * i for i in range(16)}
def isg(v): return v in GREASE
NAMES = {0:'server_name',5:'status_request',10:'supported_groups',11:'ec_point_formats',13:'signature_algorithms',
 16:'alpn',18:'signed_cert_timestamp',21:'padding',22:'encrypt_then_mac',23:'extended_master_secret',27:'compress_certificate',
 28:'record_size_limit',34:'delegated_credentials',35:'session_ticket',41:'pre_shared_key',43:'supported_versions',45:'psk_key_exchange_modes',
 49:'post_handshake_auth',50:'signature_algorithms_cert',51:'key_share',14:'use_srtp',17513:'application_settings(old)',17613:'application_settings',
 0xfe0d:'encrypted_client_hello',0xff01:'renegotiation_info',0xca34:'trust_anchors'}

def sha12(s): return hashlib.sha256(s.encode()).hexdigest()[:12]

def parse_hello(body, dtls=False):
    """body: ClientHello handshake body (after the 4-byte (TLS) or 12-byte (DTLS) header)."""
    p = 0
    legacy = struct.unpack_from('>H', body, p)[0]; p += 2 + 32
    sl = body[p]; p += 1 + sl
    if dtls:
        cl = body[p]; p += 1 + cl
    n = struct.unpack_from('>H', body, p)[0]; p += 2
    ciphers = [struct.unpack_from('>H', body, p + i)[0] for i in range(0, n, 2)]; p += n
    cm = body[p]; p += 1 + cm
    exts = []
    if p < len(body):
        el = struct.unpack_from('>H', body, p)[0]; p += 2
        end = p + el
        while p < end:
            t, l = struct.unpack_from('>HH', body, p); p += 4
            exts.append((t, body[p:p + l])); p += l
    return legacy, ciphers, exts

def fields(legacy, ciphers, exts, proto='t'):
    d = {'legacy_version': hex(legacy), 'ciphers': ['%04x' % c for c in ciphers],
         'extensions': [NAMES.get(t, '%04x' % t) if not isg(t) else 'G' for t, _ in exts]}
    ext = dict((t, v) for t, v in exts)
    sv = []
    if 43 in ext:
        v = ext[43]; sv = [struct.unpack_from('>H', v, 1 + i)[0] for i in range(0, v[0], 2)]
    d['supported_versions'] = ['G' if isg(x) else '%04x' % x for x in sv]
    groups = []
    if 10 in ext:
        v = ext[10]; groups = [struct.unpack_from('>H', v, 2 + i)[0] for i in range(0, struct.unpack_from('>H', v)[0], 2)]
    d['groups'] = ['G' if isg(x) else '%04x' % x for x in groups]
    sig = []
    if 13 in ext:
        v = ext[13]; sig = [struct.unpack_from('>H', v, 2 + i)[0] for i in range(0, struct.unpack_from('>H', v)[0], 2)]
    d['sigalgs'] = ['G' if isg(x) else '%04x' % x for x in sig]
    alpn = []
    if 16 in ext:
        v = ext[16]; q = 2
        while q < len(v):
            l = v[q]; alpn.append(v[q + 1:q + 1 + l].decode('latin1')); q += 1 + l
    d['alpn'] = alpn
    ks = []
    if 51 in ext:
        v = ext[51]; q = 2
        while q < len(v):
            g, l = struct.unpack_from('>HH', v, q); ks.append(('G' if isg(g) else '%04x' % g) + '/%d' % l); q += 4 + l
    d['key_share'] = ks
    if 11 in ext: d['ec_point_formats'] = list(ext[11][1:])
    if 27 in ext: d['compress_certificate'] = ext[27].hex()
    if 28 in ext: d['record_size_limit'] = ext[28].hex()
    d['grease'] = {'ciphers': any(isg(c) for c in ciphers), 'extensions': any(isg(t) for t, _ in exts),
                   'groups': any(isg(g) for g in groups), 'sigalgs': any(isg(s) for s in sig), 'versions': any(isg(s) for s in sv)}
    # JA4
    vers = [x for x in sv if not isg(x)]
    top = max(vers) if vers else legacy
    vmap = {0x0304: '13', 0x0303: '12', 0x0302: '11', 0x0301: '10', 0x0300: 's3', 0xfeff: 'd1', 0xfefd: 'd2', 0xfefc: 'd3'}
    vs = vmap.get(top, '00')
    c2 = [c for c in ciphers if not isg(c)]
    e2 = [t for t, _ in exts if not isg(t)]
    sni = 'd' if 0 in ext else 'i'
    a = alpn[0] if alpn else ''
    al = (a[0] + a[-1]) if a else '00'
    if a and (not a[0].isalnum() or not a[-1].isalnum()):
        h = a.encode('latin1').hex(); al = h[0] + h[-1]
    ja4a = '%s%s%s%02d%02d%s' % (proto, vs, sni, min(len(c2), 99), min(len(e2), 99), al)
    cs = ','.join(sorted('%04x' % c for c in c2))
    ja4b = sha12(cs) if c2 else '000000000000'
    es = ','.join(sorted('%04x' % t for t in e2 if t not in (0, 16)))
    sg = ','.join('%04x' % s for s in sig if not isg(s))
    ja4c_in = es + ('_' + sg if sg else '')
    ja4c = sha12(ja4c_in) if e2 else '000000000000'
    d['ja4'] = '%s_%s_%s' % (ja4a, ja4b, ja4c)
    d['ja4_r'] = '%s_%s_%s' % (ja4a, cs, ja4c_in)
    # JA3
    ja3s = '%d,%s,%s,%s,%s' % (legacy, '-'.join(str(c) for c in c2), '-'.join(str(t) for t in e2),
                               '-'.join(str(g) for g in groups if not isg(g)), '-'.join(str(x) for x in ext.get(11, b'\x00')[1:]) if 11 in ext else '')
    d['ja3_full'] = ja3s; d['ja3'] = hashlib.md5(ja3s.encode()).hexdigest()
    return d

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
