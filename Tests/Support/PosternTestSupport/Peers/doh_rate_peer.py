"""A small DoH stand-in over TLS and HTTP/1.1 for the dnstt DoH link's tests of answers a real
resolver gives only under load or misconfiguration (Go's net/http stand-in and unbound cannot be
made to send them on cue): 429 with Retry-After, bodies over the link's 64000-byte cap, a wrong
content type. Prints 'PORT n' once listening and 'REQUEST <path> <n>' for the n-th POST on a path.

  doh_rate_peer.py CERT KEY

Paths: /rate answers the first POST 429 with 'Retry-After: 2', later ones 200 echoing the body;
/caps answers POST 1 with a 64001-byte body (Content-Length), POST 2 with a 64001-byte chunked
body, POST 3 with content-type text/plain, later ones 200 echoing the body. Echoes carry
content-type application/dns-message."""
import http.server, ssl, sys, threading

cert, key = sys.argv[1], sys.argv[2]
counts = {}
lock = threading.Lock()

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, format, *args):
        pass
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock:
            counts[self.path] = counts.get(self.path, 0) + 1
            n = counts[self.path]
        print(f"REQUEST {self.path} {n}", flush=True)
        if self.path == "/rate" and n == 1:
            self.reply(429, "text/plain", b"slow down", [("Retry-After", "2")])
        elif self.path == "/caps" and n == 1:
            self.reply(200, "application/dns-message", b"\x00" * 64001)
        elif self.path == "/caps" and n == 2:
            self.send_response(200)
            self.send_header("Content-Type", "application/dns-message")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for _ in range(2):
                self.wfile.write(b"7d01\r\n" + b"\x00" * 32001 + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        elif self.path == "/caps" and n == 3:
            self.reply(200, "text/plain", body)
        else:
            self.reply(200, "application/dns-message", body)
    def reply(self, status, ctype, body, extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
context.set_alpn_protocols(["http/1.1"])
server.socket = context.wrap_socket(server.socket, server_side=True)
print(f"PORT {server.server_address[1]}", flush=True)
server.serve_forever()
