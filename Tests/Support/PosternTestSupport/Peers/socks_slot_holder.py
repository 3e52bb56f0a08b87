"""Another local account's attempt to hold a SOCKS listener's sessions: opens COUNT connections to
HOST:PORT, sends each a SOCKS5 greeting and waits for the method reply (a session the listener
serves) or the close (a refusal). Prints 'RESULT held=H refused=R', then keeps every connection
open, silent, until killed: the held ones keep their slots."""
import socket, sys, time

host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
connections = []
held = refused = 0
for _ in range(count):
    connection = socket.create_connection((host, port), timeout=20)
    connections.append(connection)
    try:
        connection.sendall(bytes([5, 1, 0]))
        reply = connection.recv(2)
    except OSError:
        reply = b""
    if len(reply) == 2:
        held += 1
    else:
        refused += 1
print(f"RESULT held={held} refused={refused}", flush=True)
while True:
    time.sleep(3600)
