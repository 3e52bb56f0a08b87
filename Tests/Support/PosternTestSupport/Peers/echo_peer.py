"""Loopback TCP echo peer for the load test: echoes every byte back on the same connection.
Prints 'PORT n' once listening and, per closed connection, 'CLOSED <bytes echoed>', so a test can
check that its streams really arrived here (through the exit) and carried what the client counted."""
import asyncio, sys

host, port = sys.argv[1], int(sys.argv[2])


async def echo(reader, writer):
    echoed = 0
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
            echoed += len(data)
    except (ConnectionError, OSError):
        pass
    finally:
        print(f"CLOSED {echoed}", flush=True)
        writer.close()


async def main():
    server = await asyncio.start_server(echo, host, port, backlog=1024)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()

asyncio.run(main())
