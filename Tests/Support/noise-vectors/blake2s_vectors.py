#!/usr/bin/env python3
"""Writes Tests/CryptoTests/Vectors/blake2s-python.json: BLAKE2s, HMAC-BLAKE2s and Noise's HKDF made
with Python's hashlib and hmac (an implementation independent of PosternCrypto's Swift BLAKE2s).

    python3 Tests/Support/noise-vectors/blake2s_vectors.py

Inputs are deterministic: byte i of a message of length n is (i * 7 + n) % 256, keys likewise.
"""
import hashlib
import hmac
import json
import os


def data(n, salt=0):
    return bytes((i * 7 + n + salt) % 256 for i in range(n))


def noise_hkdf(chaining_key, ikm, count):
    temp = hmac.new(chaining_key, ikm, hashlib.blake2s).digest()
    out, previous = [], b""
    for i in range(1, count + 1):
        previous = hmac.new(temp, previous + bytes([i]), hashlib.blake2s).digest()
        out.append(previous.hex())
    return out


def rfc7693_selftest():
    """RFC 7693 Appendix E's self-test for BLAKE2s, with hashlib underneath."""
    outer = hashlib.blake2s(digest_size=32)
    for outlen in (16, 20, 28, 32):
        for inlen in (0, 3, 64, 65, 255, 1024):
            outer.update(hashlib.blake2s(selftest_seq(inlen, inlen), digest_size=outlen).digest())
            key = selftest_seq(outlen, outlen)
            outer.update(hashlib.blake2s(selftest_seq(inlen, inlen), digest_size=outlen, key=key).digest())
    return outer.hexdigest()


def selftest_seq(length, seed):
    """RFC 7693 Appendix E's deterministic generator (a Fibonacci-like 32-bit sequence)."""
    a = (0xDEAD4BAD * seed) & 0xFFFFFFFF
    b = 1
    out = bytearray()
    for _ in range(length):
        t = (a + b) & 0xFFFFFFFF
        a, b = b, t
        out.append((t >> 24) & 0xFF)
    return bytes(out)


def main():
    hashes = []
    for n in list(range(0, 131)) + [191, 192, 193, 255, 256, 257, 1000, 4096]:
        hashes.append({"message": data(n).hex(), "key": "", "outputLength": 32,
                       "digest": hashlib.blake2s(data(n)).hexdigest()})
    for keylen, outlen, n in [(1, 32, 0), (16, 16, 3), (32, 32, 64), (32, 20, 65), (7, 1, 200), (32, 28, 1024)]:
        key, message = data(keylen, 99), data(n)
        hashes.append({"message": message.hex(), "key": key.hex(), "outputLength": outlen,
                       "digest": hashlib.blake2s(message, key=key, digest_size=outlen).hexdigest()})
    hmacs = []
    for keylen in (0, 1, 32, 63, 64, 65, 100):
        for n in (0, 1, 63, 64, 65, 200):
            key, message = data(keylen, 50), data(n)
            hmacs.append({"key": key.hex(), "message": message.hex(),
                          "mac": hmac.new(key, message, hashlib.blake2s).hexdigest()})
    hkdfs = []
    for ikmlen, count in ((0, 2), (32, 2), (32, 3), (100, 3)):
        chaining_key, ikm = data(32, 11), data(ikmlen, 22)
        hkdfs.append({"chainingKey": chaining_key.hex(), "inputKeyMaterial": ikm.hex(),
                      "outputs": noise_hkdf(chaining_key, ikm, count)})
    document = {"generator": "Tests/Support/noise-vectors/blake2s_vectors.py (Python hashlib and hmac)",
                "rfc7693SelfTest": rfc7693_selftest(),
                "hashes": hashes, "hmacs": hmacs, "hkdfs": hkdfs}
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    with open(os.path.join(root, "Tests/CryptoTests/Vectors/blake2s-python.json"), "w") as f:
        json.dump(document, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
