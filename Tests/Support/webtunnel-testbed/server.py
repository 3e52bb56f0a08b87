#!/usr/bin/env python3
"""The test bed's webtunnel server: the smallest stand-in for the reference server (Debian ships
none). It sits behind nginx on loopback, accepts the HTTP/1.1 upgrade nginx forwards from the
secret path, answers 101 as the reference server does, and pipes the stream to a bridge's ORPort.

Like the reference server (webtunnel transport/httpupgrade Server): the request must carry
`Connection: upgrade` and `Upgrade: websocket` (first value, case-insensitive); the answer is
`HTTP/1.1 101 Switching Protocols` with the same two headers; the client address is the first
`X-Forwarded-For` entry (logged). Caps: request headers 16 KiB, 10 s to send them.

    server.py LISTEN_ADDR LISTEN_PORT ORPORT_ADDR ORPORT_PORT
"""
import asyncio
import sys

MAX_HEADER_BYTES = 16384
HEADER_DEADLINE = 10.0
ANSWER = b"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"


def log(message):
    print(message, flush=True)


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.write_eof()
        except (OSError, RuntimeError):
            pass


async def handle(client_reader, client_writer, orport):
    try:
        head = await asyncio.wait_for(client_reader.readuntil(b"\r\n\r\n"), HEADER_DEADLINE)
    except (asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        log("refused: no complete request header")
        client_writer.close()
        return
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers.setdefault(name.strip().lower(), value.strip())
    if headers.get("connection", "").lower() != "upgrade" or headers.get("upgrade", "").lower() != "websocket":
        log("refused: not an upgrade request: " + lines[0])
        client_writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await client_writer.drain()
        client_writer.close()
        return
    forwarded = headers.get("x-forwarded-for", "").split(",")[0].strip() or "-"
    try:
        bridge_reader, bridge_writer = await asyncio.open_connection(*orport)
    except OSError as error:
        log("bridge unreachable: %s" % error)
        client_writer.close()
        return
    client_writer.write(ANSWER)
    await client_writer.drain()
    log("upgraded %s for client %s" % (lines[0].split(" ")[1] if " " in lines[0] else "?", forwarded))
    await asyncio.gather(pipe(client_reader, bridge_writer), pipe(bridge_reader, client_writer))
    client_writer.close()
    bridge_writer.close()


async def main():
    listen_addr, listen_port, or_addr, or_port = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    server = await asyncio.start_server(lambda r, w: handle(r, w, (or_addr, or_port)), listen_addr, listen_port,
                                        limit=MAX_HEADER_BYTES)
    log("listening on %s:%d, bridge %s:%d" % (listen_addr, listen_port, or_addr, or_port))
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
