#!/usr/bin/env python3
"""A hostile snowflake broker for the test bed (issue #12): a stand-in, since no real broker misbehaves
on purpose. The first path segment of the request picks the attack, so one listener serves every
test: a client whose bridge line says url=http://ADDR:PORT/MODE/ posts its poll to /MODE/client.

  chunk-overflow   chunked: a 1-byte chunk, then chunk size 7fffffffffffffff (trapped Postern)
  endless-headers  a status line, then header lines for as long as the client reads
  huge-body        Content-Length 100 MB and 100 MB of body
  huge-chunked     chunked, 64 KiB chunks, 100 MB
  huge-eof         no framing, 100 MB until close
  slow-drip        a valid-looking answer, one byte a second
  invalid-json     200 with a body that is not JSON
  hostile-sdp      a well-formed answer whose SDP has 1000 candidates
  garbage-sdp      an answer whose SDP is not SDP
  silent-proxy     a well-formed answer naming a proxy that never answers (ICE to a dead port)
  anything else    404

  hostile-broker.py --listen 127.0.5.5:8080
"""
import argparse
import json
import socket
import socketserver
import sys
import time

HUNDRED_MB = 100 * 1024 * 1024


def answer_body(sdp):
    return json.dumps({"answer": json.dumps({"type": "answer", "sdp": sdp})}).encode()


def sdp_with(candidates):
    lines = ["v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0",
             "a=fingerprint:sha-256 " + ":".join(["AB"] * 32), "a=group:BUNDLE 0",
             "m=application 9 UDP/DTLS/SCTP webrtc-datachannel", "c=IN IP4 0.0.0.0",
             "a=setup:active", "a=mid:0", "a=sctp-port:5000", "a=ice-ufrag:hostileufrag",
             "a=ice-pwd:hostilepasswordhostilepass"]
    lines += ["a=candidate:%d 1 udp 2130706431 127.0.5.5 %d typ host" % (i, 9 if i == 0 else 10000 + i)
              for i in range(candidates)]
    lines.append("a=end-of-candidates")
    return "\r\n".join(lines) + "\r\n"


class Handler(socketserver.BaseRequestHandler):
    def send(self, data):
        self.request.sendall(data)

    def handle(self):
        self.request.settimeout(30)
        request = b""
        try:
            while b"\r\n\r\n" not in request and len(request) < 65536:
                piece = self.request.recv(4096)
                if not piece:
                    return
                request += piece
            head, _, body = request.partition(b"\r\n\r\n")
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    want = int(line.split(b":", 1)[1])
                    while len(body) < want:
                        piece = self.request.recv(4096)
                        if not piece:
                            break
                        body += piece
            path = head.split(b" ")[1].decode(errors="replace")
            mode = path.strip("/").split("/")[0]
            print("hostile broker: mode %s" % mode, flush=True)
            getattr(self, "mode_" + mode.replace("-", "_"), self.mode_unknown)()
        except (BrokenPipeError, ConnectionResetError, socket.timeout, OSError):
            pass

    def mode_unknown(self):
        self.send(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    def mode_chunk_overflow(self):
        self.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n7fffffffffffffff\r\n")
        time.sleep(2)

    def mode_endless_headers(self):
        self.send(b"HTTP/1.1 200 OK\r\n")
        line = b"X-Filler: " + b"a" * 100 + b"\r\n"
        for _ in range(1_000_000):
            self.send(line * 64)

    def stream(self, total, piece=b"\0" * 65536, framing=lambda p: p):
        sent = 0
        while sent < total:
            self.send(framing(piece))
            sent += len(piece)

    def mode_huge_body(self):
        self.send(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % HUNDRED_MB)
        self.stream(HUNDRED_MB)

    def mode_huge_chunked(self):
        self.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        self.stream(HUNDRED_MB, framing=lambda p: b"%x\r\n" % len(p) + p + b"\r\n")

    def mode_huge_eof(self):
        self.send(b"HTTP/1.1 200 OK\r\n\r\n")
        self.stream(HUNDRED_MB)

    def mode_slow_drip(self):
        body = answer_body(sdp_with(1))
        response = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        for byte in response:
            self.send(bytes([byte]))
            time.sleep(1)

    def reply(self, body):
        self.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)

    def mode_invalid_json(self):
        self.reply(b'{"answer": {"type": "answer", "sdp": [1, 2, 3')

    def mode_hostile_sdp(self):
        self.reply(answer_body(sdp_with(1000)))

    def mode_garbage_sdp(self):
        self.reply(answer_body("a=fingerprint:sha-256 ZZ\r\nm=application\r\na=candidate:x 99999999999999999999 udp\r\n"))

    def mode_silent_proxy(self):
        self.reply(answer_body(sdp_with(1)))


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--listen", default="127.0.5.5:8080")
    args = parser.parse_args()
    host, port = args.listen.rsplit(":", 1)
    with Server((host, int(port)), Handler) as server:
        print("hostile broker on http://%s/" % args.listen, flush=True)
        server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
