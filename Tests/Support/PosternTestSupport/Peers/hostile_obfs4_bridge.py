"""A hostile obfs4 "bridge" of ours: accepts TCP like a bridge and answers what no bridge would.
No real obfs4 server misbehaves on request, and the point is a censor-run "bridge".

    hostile_obfs4_bridge.py HOST PORT MODE

Prints 'PORT n' once listening and 'CONNECTED' per connection. Reads the client's handshake (and
everything after it) without ever answering correctly:
  random       random bytes, 64 KiB a second, without end (no mark can be found in them)
  max-padding  exactly 8192 random bytes, the most a server reply may hold, then silence
  junk-frames  a reply-sized burst of random bytes, then 0xFFFF length fields without end
"""
import os, socket, sys, threading, time, signal
signal.pthread_sigmask(signal.SIG_UNBLOCK, signal.valid_signals())

host, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]


def drain(conn):
    try:
        while conn.recv(65536):
            pass
    except OSError:
        pass


def serve(conn):
    print("CONNECTED", flush=True)
    threading.Thread(target=drain, args=(conn,), daemon=True).start()
    try:
        if mode == "random":
            while True:
                conn.sendall(os.urandom(65536))
                time.sleep(1)
        elif mode == "max-padding":
            conn.sendall(os.urandom(8192))
            time.sleep(3600)
        elif mode == "junk-frames":
            conn.sendall(os.urandom(1500))
            while True:
                conn.sendall(b"\xff\xff" * 4096)
                time.sleep(0.1)
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
