"""A hostile WebSocket server / Nostr relay of ours (no real relay misbehaves on request).

    hostile_ws_peer.py HOST PORT MODE [FILE]

Prints 'PORT n' once listening, 'CONNECTED' per connection, and for the flooding modes 'SENT n'
(bytes written so far) about every 0.2 s, so a test can see how far the client let it get.
Plain ws:// only; the handshake is ours, answering any GET with a correct Sec-WebSocket-Accept.

Modes (after a correct handshake unless the name says otherwise):
  huge-head       endless header lines, never the blank line
  drip-head       the correct head, one byte every 0.5 s
  silent          nothing more, and never reads (a half-open connection as the client sees it)
  ping-flood      pings as fast as it can, never reading (the client's pongs pile up on its side)
  huge-length     one binary frame whose 64-bit length is 2^62, then silence
  endless-text    64 KiB text frames as fast as the client takes them
  huge-event      a Nostr EVENT of 600 KiB (over the 512 KiB cap)
  endless-events  ["EVENT","s",{...}] messages (valid JSON, invalid signature) without end
  invalid-json    garbage text frames without end, 1 per 10 ms
  replay          once the client has sent something (its REQ), each line of FILE as a text frame,
                  in order (a relay that sends what it likes: the same event again, say), then reads
  escape-status   (no handshake) a 403 whose status line carries terminal escape sequences
  escape-refusal  refuses every EVENT with an OK false whose message carries terminal escape
                  sequences, and sends a NOTICE like it; prints 'REFUSED' per refusal
"""
import base64, hashlib, json, os, socket, sys, threading, time, signal
signal.pthread_sigmask(signal.SIG_UNBLOCK, signal.valid_signals())

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
host, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
replay_file = sys.argv[4] if len(sys.argv) > 4 else None


def frame(opcode, payload, length=None):
    n = len(payload) if length is None else length
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([n])
    elif n <= 0xFFFF:
        head += bytes([126]) + n.to_bytes(2, "big")
    else:
        head += bytes([127]) + n.to_bytes(8, "big")
    return head + payload


def read_request(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return None
        data += chunk
    for line in data.split(b"\r\n"):
        if line.lower().startswith(b"sec-websocket-key:"):
            return line.split(b":", 1)[1].strip()
    return b""


def head_for(key):
    accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
    return (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")


# A window title (OSC 0), a screen clear (CSI 2J), a C1 CSI and a right-to-left override.
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\u009b31m\u202e"


def read_exactly(conn, count):
    data = b""
    while len(data) < count:
        chunk = conn.recv(count - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data


def read_client_frame(conn):
    """One masked client frame: (opcode, payload)."""
    first, second = read_exactly(conn, 2)
    length = second & 0x7F
    if length == 126:
        length = int.from_bytes(read_exactly(conn, 2), "big")
    elif length == 127:
        length = int.from_bytes(read_exactly(conn, 8), "big")
    mask = read_exactly(conn, 4) if second & 0x80 else b"\0\0\0\0"
    payload = read_exactly(conn, length)
    return first & 0x0F, bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def flood(conn, make):
    sent = 0
    last = time.time()
    while True:
        data = make()
        conn.sendall(data)
        sent += len(data)
        if time.time() - last > 0.2:
            print(f"SENT {sent}", flush=True)
            last = time.time()


def serve(conn):
    print("CONNECTED", flush=True)
    try:
        key = read_request(conn)
        if key is None:
            return
        if mode == "escape-status":
            conn.sendall(b"HTTP/1.1 403 " + ESCAPES.encode() + b"\r\n\r\n")
            return
        if mode == "huge-head":
            conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\n")
            flood(conn, lambda: b"X-Filler: " + b"a" * 1000 + b"\r\n")
        head = head_for(key)
        if mode == "drip-head":
            for byte in head:
                conn.sendall(bytes([byte]))
                time.sleep(0.5)
            return
        conn.sendall(head)
        if mode == "silent":
            time.sleep(3600)
        elif mode == "ping-flood":
            ping = frame(9, b"p" * 125)
            flood(conn, lambda: ping * 64)
        elif mode == "huge-length":
            conn.sendall(frame(2, b"", length=1 << 62) + b"\x00" * 16)
            time.sleep(3600)
        elif mode == "endless-text":
            message = frame(1, b"x" * 65536)
            flood(conn, lambda: message)
        elif mode == "huge-event":
            content = "y" * (600 * 1024)
            event = ('["EVENT","s",{"id":"00","pubkey":"00","created_at":1,"kind":1,"tags":[],"content":"%s","sig":"00"}]' % content)
            conn.sendall(frame(1, event.encode()))
            time.sleep(3600)
        elif mode == "endless-events":
            counter = [0]

            def make():
                counter[0] += 1
                event = ('["EVENT","s",{"id":"%064x","pubkey":"%064x","created_at":%d,"kind":1,"tags":[],"content":"%s","sig":"%0128x"}]'
                         % (counter[0], 1, counter[0], "z" * 4000, 0))
                return frame(1, event.encode())
            flood(conn, make)
        elif mode == "replay":
            if not conn.recv(65536):
                return
            with open(replay_file) as lines:
                for line in lines:
                    if line.strip():
                        conn.sendall(frame(1, line.strip().encode()))
            while conn.recv(65536):
                pass
        elif mode == "escape-refusal":
            conn.sendall(frame(1, json.dumps(["NOTICE", "notice " + ESCAPES]).encode()))
            while True:
                opcode, payload = read_client_frame(conn)
                if opcode == 8:
                    return
                if opcode != 1:
                    continue
                message = json.loads(payload)
                if message[0] == "EVENT":
                    conn.sendall(frame(1, json.dumps(["OK", message[1]["id"], False, "blocked: " + ESCAPES]).encode()))
                    print("REFUSED", flush=True)
        elif mode == "invalid-json":
            while True:
                conn.sendall(frame(1, b'["EVENT",{{{' + os.urandom(8).hex().encode()))
                time.sleep(0.01)
    except OSError:
        pass
    finally:
        conn.close()


listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind((host, port))
listener.listen(16)
print(f"PORT {listener.getsockname()[1]}", flush=True)
while True:
    connection, _ = listener.accept()
    threading.Thread(target=serve, args=(connection,), daemon=True).start()
