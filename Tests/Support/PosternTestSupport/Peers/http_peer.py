"""Loopback HTTP peer for the app-layer tests: serves DIR, prints 'PORT n' once listening and one
'REQUEST <method> <path>' line per request, so a test can prove a request did or did not arrive."""
import http.server, sys, functools

host, port, directory = sys.argv[1], int(sys.argv[2]), sys.argv[3]

class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass
    def send_head(self):
        print(f"REQUEST {self.command} {self.path}", flush=True)
        return super().send_head()

server = http.server.ThreadingHTTPServer((host, port), functools.partial(Handler, directory=directory))
print(f"PORT {server.server_address[1]}", flush=True)
server.serve_forever()
