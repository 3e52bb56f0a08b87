"""TLS and DTLS handshake fingerprints: the fields of a ClientHello, its JA3 and JA4, and the
shape of a (D)TLS server flight (ServerHello and CertificateRequest), with JA4S. Shared by the
research dump scripts/tls-research/ja4.py and the test bed's fingerprinting censor
(scripts/testbed-censor.py), which feeds it bytes straight off the wire: every parser here
bounds-checks and raises Malformed on anything it cannot read, never IndexError or
struct.error.

JA4 and JA4S follow the public definition (FoxIO's JA4+ specification, "JA4: TLS Client
Fingerprint" and "JA4S: TLS Server Response"); JA3 follows Salesforce's (MD5 of
version,ciphers,extensions,groups,point formats, GREASE left out). Standard library only;
imported from the scripts' own directory."""

import hashlib
import struct

GREASE = {0x0A0A + 0x1010 * i for i in range(16)}

NAMES = {0: "server_name", 5: "status_request", 10: "supported_groups", 11: "ec_point_formats",
         13: "signature_algorithms", 14: "use_srtp", 16: "alpn", 18: "signed_cert_timestamp",
         21: "padding", 22: "encrypt_then_mac", 23: "extended_master_secret",
         27: "compress_certificate", 28: "record_size_limit", 34: "delegated_credentials",
         35: "session_ticket", 41: "pre_shared_key", 43: "supported_versions",
         45: "psk_key_exchange_modes", 49: "post_handshake_auth", 50: "signature_algorithms_cert",
         51: "key_share", 17513: "application_settings(old)", 17613: "application_settings",
         0xFE0D: "encrypted_client_hello", 0xFF01: "renegotiation_info", 0xCA34: "trust_anchors"}

# Handshake message types.
CLIENT_HELLO = 1
SERVER_HELLO = 2
CERTIFICATE_REQUEST = 13
SERVER_HELLO_DONE = 14
HANDSHAKE_RECORD = 22

# The largest handshake message the collectors below assemble (a ClientHello with ECH, padding
# and a post-quantum key share is about 2 KB; 16 KiB leaves room and bounds a hostile peer).
MESSAGE_CAP = 16384


class Malformed(ValueError):
    """Bytes that are not the structure they claim to be (truncated, overlong, inconsistent)."""


def is_grease(value):
    return value in GREASE


def sha12(text):
    return hashlib.sha256(text.encode()).hexdigest()[:12]


class Reader:
    """Bounds-checked big-endian reads from a byte string."""

    def __init__(self, data):
        self.data = bytes(data)
        self.pos = 0

    def remaining(self):
        return len(self.data) - self.pos

    def take(self, count):
        if count < 0 or self.pos + count > len(self.data):
            raise Malformed(f"wanted {count} bytes at {self.pos}, have {self.remaining()}")
        chunk = self.data[self.pos:self.pos + count]
        self.pos += count
        return chunk

    def u8(self):
        return self.take(1)[0]

    def u16(self):
        return struct.unpack("!H", self.take(2))[0]

    def u24(self):
        return int.from_bytes(self.take(3), "big")

    def vector(self, length_bytes):
        length = int.from_bytes(self.take(length_bytes), "big")
        return self.take(length)

    def u16_list(self, length_bytes):
        raw = self.vector(length_bytes)
        if len(raw) % 2:
            raise Malformed("odd length of a list of 16-bit values")
        return [int.from_bytes(raw[i:i + 2], "big") for i in range(0, len(raw), 2)]


def parse_extensions(reader):
    """[(type, data)] in order; an absent extensions block (old hellos) is an empty list."""
    if reader.remaining() == 0:
        return []
    block = Reader(reader.vector(2))
    extensions = []
    while block.remaining():
        extension_type = block.u16()
        extensions.append((extension_type, block.vector(2)))
    return extensions


class ClientHello:
    def __init__(self, legacy_version, ciphers, extensions):
        self.legacy_version = legacy_version
        self.ciphers = ciphers
        self.extensions = extensions


def parse_client_hello(body, dtls=False):
    """A ClientHello's body (after the 4-byte TLS or 12-byte DTLS handshake header)."""
    reader = Reader(body)
    legacy_version = reader.u16()
    reader.take(32)          # random
    reader.vector(1)         # session id
    if dtls:
        reader.vector(1)     # cookie
    ciphers = reader.u16_list(2)
    reader.vector(1)         # compression methods
    return ClientHello(legacy_version, ciphers, parse_extensions(reader))


def parse_hello(body, dtls=False):
    """(legacy version, ciphers, extensions): the tuple scripts/tls-research/ja4.py works with."""
    hello = parse_client_hello(body, dtls)
    return hello.legacy_version, hello.ciphers, hello.extensions


VERSION_CODES = {0x0304: "13", 0x0303: "12", 0x0302: "11", 0x0301: "10", 0x0300: "s3",
                 0xFEFF: "d1", 0xFEFD: "d2", 0xFEFC: "d3"}


def alpn_code(value):
    """JA4's two ALPN characters: first and last of the first value, or hex digits when either
    is not alphanumeric, '00' without ALPN."""
    if not value:
        return "00"
    first, last = chr(value[0]), chr(value[-1])
    if first.isascii() and first.isalnum() and last.isascii() and last.isalnum():
        return first + last
    hexed = value.hex()
    return hexed[0] + hexed[-1]


def extension_map(extensions):
    result = {}
    for extension_type, data in extensions:
        result.setdefault(extension_type, data)
    return result


def _u16_list_in(data, length_bytes):
    return Reader(data).u16_list(length_bytes)


def fields(legacy, ciphers, exts, proto="t"):
    """The fields of a ClientHello, its JA4 (and raw form), and JA3. `proto` is JA4's first
    letter: t (TCP), d (DTLS), q (QUIC). Raises Malformed on an unreadable extension body."""
    by_type = extension_map(exts)

    def names(values):
        return ["G" if is_grease(v) else "%04x" % v for v in values]

    result = {"legacy_version": hex(legacy), "ciphers": ["%04x" % c for c in ciphers],
              "extensions": ["G" if is_grease(t) else NAMES.get(t, "%04x" % t) for t, _ in exts]}
    versions = _u16_list_in(by_type[43], 1) if 43 in by_type else []
    groups = _u16_list_in(by_type[10], 2) if 10 in by_type else []
    sigalgs = _u16_list_in(by_type[13], 2) if 13 in by_type else []
    result["supported_versions"] = names(versions)
    result["groups"] = names(groups)
    result["sigalgs"] = names(sigalgs)
    alpn = []
    if 16 in by_type:
        protocols = Reader(Reader(by_type[16]).vector(2))
        while protocols.remaining():
            alpn.append(protocols.vector(1))
    result["alpn"] = [a.decode("latin1") for a in alpn]
    shares = []
    if 51 in by_type:
        entries = Reader(Reader(by_type[51]).vector(2))
        while entries.remaining():
            group = entries.u16()
            shares.append(("G" if is_grease(group) else "%04x" % group) + "/%d" % len(entries.vector(2)))
    result["key_share"] = shares
    point_formats = list(Reader(by_type[11]).vector(1)) if 11 in by_type else None
    if point_formats is not None:
        result["ec_point_formats"] = point_formats
    if 27 in by_type:
        result["compress_certificate"] = by_type[27].hex()
    if 28 in by_type:
        result["record_size_limit"] = by_type[28].hex()
    result["grease"] = {"ciphers": any(map(is_grease, ciphers)),
                        "extensions": any(is_grease(t) for t, _ in exts),
                        "groups": any(map(is_grease, groups)), "sigalgs": any(map(is_grease, sigalgs)),
                        "versions": any(map(is_grease, versions))}
    # JA4: a_b_c.
    real_versions = [v for v in versions if not is_grease(v)]
    top = max(real_versions) if real_versions else legacy
    real_ciphers = [c for c in ciphers if not is_grease(c)]
    real_extensions = [t for t, _ in exts if not is_grease(t)]
    sni = "d" if 0 in by_type else "i"
    ja4_a = "%s%s%s%02d%02d%s" % (proto, VERSION_CODES.get(top, "00"), sni, min(len(real_ciphers), 99),
                                  min(len(real_extensions), 99), alpn_code(alpn[0] if alpn else b""))
    cipher_text = ",".join(sorted("%04x" % c for c in real_ciphers))
    ja4_b = sha12(cipher_text) if real_ciphers else "000000000000"
    extension_text = ",".join(sorted("%04x" % t for t in real_extensions if t not in (0, 16)))
    sigalg_text = ",".join("%04x" % s for s in sigalgs if not is_grease(s))
    ja4_c_input = extension_text + ("_" + sigalg_text if sigalg_text else "")
    ja4_c = sha12(ja4_c_input) if real_extensions else "000000000000"
    result["ja4"] = "%s_%s_%s" % (ja4_a, ja4_b, ja4_c)
    result["ja4_r"] = "%s_%s_%s" % (ja4_a, cipher_text, ja4_c_input)
    ja3_text = "%d,%s,%s,%s,%s" % (
        legacy, "-".join(str(c) for c in real_ciphers), "-".join(str(t) for t in real_extensions),
        "-".join(str(g) for g in groups if not is_grease(g)),
        "-".join(str(p) for p in point_formats) if point_formats is not None else "")
    result["ja3_full"] = ja3_text
    result["ja3"] = hashlib.md5(ja3_text.encode()).hexdigest()
    return result


def client_hello_fields(body, dtls=False):
    """fields() of a ClientHello body; proto 'd' for DTLS, 't' for TLS over TCP."""
    return fields(*parse_hello(body, dtls), proto="d" if dtls else "t")


# ---------------------------------------------------------------------------------------------
# TLS over TCP: the first handshake message of a stream.
RECORD_CAP = 16384 + 2048  # TLSCiphertext.length's limit (RFC 8446 5.2); a plaintext is smaller


def first_tls_handshake(stream):
    """The first handshake message a TCP stream carries, from its first byte: ('more', None)
    while incomplete, ('not-tls', None) if the stream does not start with TLS handshake records,
    ('message', (type, body)) once whole. Handshake bytes are gathered across records, as a
    message may span several; at most MESSAGE_CAP bytes (beyond: Malformed)."""
    handshake = b""
    pos = 0
    while True:
        if len(handshake) >= 4:
            length = int.from_bytes(handshake[1:4], "big")
            if length > MESSAGE_CAP:
                raise Malformed(f"handshake message of {length} bytes")
            if len(handshake) >= 4 + length:
                return "message", (handshake[0], handshake[4:4 + length])
        if len(stream) - pos < 5:
            return ("more", None) if pos > 0 or _could_be_tls(stream) else ("not-tls", None)
        content_type, major, minor, length = stream[pos], stream[pos + 1], stream[pos + 2], \
            int.from_bytes(stream[pos + 3:pos + 5], "big")
        if content_type != HANDSHAKE_RECORD or major != 3 or minor > 4:
            if pos == 0:
                return "not-tls", None
            raise Malformed("a non-handshake record before the first message is complete")
        if length == 0 or length > RECORD_CAP:
            raise Malformed(f"record of {length} bytes")
        if len(stream) - pos - 5 < length:
            # Incomplete: but a message length over the cap is known as soon as it arrives.
            seen = handshake + stream[pos + 5:]
            if len(seen) >= 4 and int.from_bytes(seen[1:4], "big") > MESSAGE_CAP:
                raise Malformed(f"handshake message of {int.from_bytes(seen[1:4], 'big')} bytes")
            return "more", None
        handshake += stream[pos + 5:pos + 5 + length]
        pos += 5 + length


def _could_be_tls(prefix):
    """Whether a stream this short may still turn out to start with a handshake record."""
    expected = (HANDSHAKE_RECORD, 3)
    return all(prefix[i] == expected[i] for i in range(min(len(prefix), 2))) and \
        (len(prefix) < 3 or prefix[2] <= 4)


# ---------------------------------------------------------------------------------------------
# DTLS: records in a datagram and handshake messages in fragments (RFC 6347 4.1 and 4.2.2).
DTLS_VERSIONS = (0xFEFF, 0xFEFD, 0xFEFC)


def dtls_records(datagram):
    """[(content type, epoch, fragment)] of a datagram's DTLS 1.0/1.2 records. Malformed if the
    datagram is not a sequence of whole records."""
    reader = Reader(datagram)
    records = []
    while reader.remaining():
        content_type = reader.u8()
        version = reader.u16()
        epoch = reader.u16()
        reader.take(6)  # sequence number
        fragment = reader.vector(2)
        if version not in DTLS_VERSIONS:
            raise Malformed(f"DTLS record version {version:#06x}")
        records.append((content_type, epoch, fragment))
    return records


def looks_like_dtls_handshake(datagram):
    return len(datagram) >= 13 and datagram[0] == HANDSHAKE_RECORD and \
        int.from_bytes(datagram[1:3], "big") in DTLS_VERSIONS


class DtlsMessages:
    """Assembles one direction's plaintext (epoch 0) DTLS handshake messages from fragments,
    keyed by message_seq. Fragments may come in any order, overlap or repeat (a retransmitted
    flight); a message is whole when its fragments cover it. Bounded: MESSAGE_CAP bytes a
    message and `message_limit` messages; what is over raises Malformed. Not handled: encrypted
    handshake messages (epoch > 0, never part of a first flight) and DTLS 1.3's unified header
    (records whose first byte has the bits 001 on top), which are skipped."""

    def __init__(self, message_limit=16):
        self.message_limit = message_limit
        self.partial = {}   # message_seq -> [type, length, bytearray, [(start, end)]]
        self.whole = {}     # message_seq -> (type, body)

    def add_datagram(self, datagram):
        """Adds a datagram's handshake fragments; returns the message_seqs it completed."""
        completed = []
        for content_type, epoch, fragment in dtls_records(datagram):
            if content_type != HANDSHAKE_RECORD or epoch != 0:
                continue
            reader = Reader(fragment)
            while reader.remaining():
                message_type = reader.u8()
                length = reader.u24()
                sequence = reader.u16()
                offset = reader.u24()
                data = reader.vector(3)
                if sequence in self.whole:
                    continue
                if length > MESSAGE_CAP or offset + len(data) > length:
                    raise Malformed(f"fragment {offset}+{len(data)} of a {length}-byte message")
                entry = self.partial.get(sequence)
                if entry is None:
                    if len(self.partial) + len(self.whole) >= self.message_limit:
                        raise Malformed("too many handshake messages")
                    entry = [message_type, length, bytearray(length), []]
                    self.partial[sequence] = entry
                elif entry[0] != message_type or entry[1] != length:
                    raise Malformed(f"fragments of message {sequence} disagree on its type or length")
                entry[2][offset:offset + len(data)] = data
                entry[3] = _merge(entry[3] + [(offset, offset + len(data))])
                if entry[3] == [(0, length)] or length == 0:
                    self.whole[sequence] = (message_type, bytes(entry[2]))
                    del self.partial[sequence]
                    completed.append(sequence)
        return completed

    def first_of_type(self, message_type):
        for sequence in sorted(self.whole):
            if self.whole[sequence][0] == message_type:
                return self.whole[sequence][1]
        return None

    def has_type(self, message_type):
        return any(t == message_type for t, _ in self.whole.values())


def _merge(ranges):
    merged = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


# ---------------------------------------------------------------------------------------------
# The server's side: ServerHello, CertificateRequest (TLS 1.2 / DTLS 1.2), JA4S.
class ServerHello:
    def __init__(self, legacy_version, session_id, cipher, extensions):
        self.legacy_version = legacy_version
        self.session_id = session_id
        self.cipher = cipher
        self.extensions = extensions


def parse_server_hello(body):
    """A ServerHello body (TLS and DTLS have the same layout after the handshake header)."""
    reader = Reader(body)
    legacy_version = reader.u16()
    reader.take(32)
    session_id = reader.vector(1)
    cipher = reader.u16()
    reader.u8()  # compression method
    return ServerHello(legacy_version, session_id, cipher, parse_extensions(reader))


def parse_certificate_request(body):
    """(certificate types, signature algorithms) of a TLS 1.2 / DTLS 1.2 CertificateRequest;
    the certificate authorities list is checked for its length only."""
    reader = Reader(body)
    types = list(reader.vector(1))
    sigalgs = reader.u16_list(2)
    reader.vector(2)
    return types, sigalgs


def ja4s(hello, proto="t"):
    """JA4S of a ServerHello: protocol, version, extension count, chosen ALPN; the cipher; the
    first 12 hex digits of SHA-256 over the extension types in the order sent."""
    by_type = extension_map(hello.extensions)
    version = hello.legacy_version
    if 43 in by_type and len(by_type[43]) == 2:
        version = int.from_bytes(by_type[43], "big")
    alpn = b""
    if 16 in by_type:
        try:
            alpn = Reader(Reader(by_type[16]).vector(2)).vector(1)
        except Malformed:
            alpn = b""
    types = [t for t, _ in hello.extensions]
    head = "%s%s%02d%s" % (proto, VERSION_CODES.get(version, "00"), min(len(types), 99), alpn_code(alpn))
    return "%s_%04x_%s" % (head, hello.cipher, sha12(",".join("%04x" % t for t in types)))


def server_flight_signature(hello, certificate_request):
    """The shape of a server flight a censor can match on: the ServerHello's extension order,
    its point formats, and the CertificateRequest's types and signature algorithms ('-' when
    the flight has none). Hex, comma-separated, fields joined by ';'."""
    by_type = extension_map(hello.extensions)
    order = ",".join("%04x" % t for t, _ in hello.extensions)
    formats = ",".join(str(f) for f in Reader(by_type[11]).vector(1)) if 11 in by_type else "-"
    if certificate_request is None:
        request = "-"
    else:
        types, sigalgs = certificate_request
        request = ",".join(str(t) for t in types) + "/" + ",".join("%04x" % s for s in sigalgs)
    return f"ext={order};pf={formats};cr={request}"
