"""Independent RFC 6455 server for the WebSocket client tests (PyPI websockets, asyncio API).
With CERT KEY arguments it serves wss. Prints 'PORT n' once listening and 'CLOSED <code> <reason>' when a connection ends. Commands (text):
  fragment         -> one text message sent as three frames
  ping             -> server pings with b'hello', waits for the pong, then sends 'pong-received'
  close:CODE:TEXT  -> server closes with CODE and TEXT
  big:N            -> one text message of N bytes
  bigfrag:N:K      -> one binary message of N bytes in K fragments
  anything else    -> echoed (text as text, binary as binary)."""
import asyncio, ssl, sys, signal
signal.pthread_sigmask(signal.SIG_UNBLOCK, signal.valid_signals())
from websockets.asyncio.server import serve

async def handler(ws):
    try:
        async for message in ws:
            if isinstance(message, str) and message == "fragment":
                await ws.send(["frag", "men", "ted"])
            elif message == "ping":
                waiter = await ws.ping(b"hello")
                await asyncio.wait_for(waiter, 5)
                await ws.send("pong-received")
            elif isinstance(message, str) and message.startswith("close:"):
                _, code, reason = message.split(":", 2)
                await ws.close(int(code), reason)
            elif isinstance(message, str) and message.startswith("big:"):
                await ws.send("x" * int(message[4:]))
            elif isinstance(message, str) and message.startswith("bigfrag:"):
                _, total, count = message.split(":")
                size = int(total) // int(count)
                await ws.send([bytes([i % 256]) * size for i in range(int(count))])
            else:
                await ws.send(message)
    finally:
        print(f"CLOSED {ws.close_code} {ws.close_reason}", flush=True)

async def main():
    context = None
    if len(sys.argv) > 4:  # CERT KEY: serve wss
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[3], sys.argv[4])
    async with serve(handler, sys.argv[1], int(sys.argv[2]), max_size=4 * 1024 * 1024, compression=None, ssl=context) as server:
        print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
        await asyncio.get_running_loop().create_future()

asyncio.run(main())
