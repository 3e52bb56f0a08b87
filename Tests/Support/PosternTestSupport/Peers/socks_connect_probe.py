"""Another local account asking a SOCKS5 listener for a connection: greets HOST:PORT with
username/password authentication when USERNAME is not empty (PASSWORD '-' means a lone NUL, as tor
sends it), CONNECTs to TARGET_IP:TARGET_PORT and prints 'RESULT reply=N' with the listener's reply
code, or 'RESULT closed' when it closed the connection first. Then exits."""
import socket, struct, sys

host, port, username, password, target_ip, target_port = sys.argv[1:7]
if password == "-":
    password = "\0"
connection = socket.create_connection((host, int(port)), timeout=90)


def read(count):
    data = b""
    while len(data) < count:
        chunk = connection.recv(count - len(data))
        if not chunk:
            print("RESULT closed", flush=True)
            sys.exit(0)
        data += chunk
    return data


method = 2 if username else 0
connection.sendall(bytes([5, 1, method]))
if read(2) != bytes([5, method]):
    print("RESULT closed", flush=True)
    sys.exit(0)
if username:
    user, secret = username.encode(), password.encode()
    connection.sendall(bytes([1, len(user)]) + user + bytes([len(secret)]) + secret)
    if read(2)[1] != 0:
        print("RESULT closed", flush=True)
        sys.exit(0)
connection.sendall(bytes([5, 1, 0, 1]) + socket.inet_aton(target_ip) + struct.pack(">H", int(target_port)))
print(f"RESULT reply={read(4)[1]}", flush=True)
