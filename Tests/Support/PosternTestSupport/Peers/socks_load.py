"""Load client for the load test (the instrument, not a peer): opens STREAMS SOCKS5 streams at once
through SOCKS (no authentication, so tor may share circuits), waits until every one is connected,
then for SECONDS keeps each busy with request/echo rounds: CHUNK bytes from a per-stream seeded
generator out, the same bytes expected back, compared byte for byte. Every stream then closes.

Prints 'RESULT <json>' at the end: streams connected and verified, bytes per stream (min/max/total),
the slowest SOCKS connect, the errors (first 20). Exit status 0 only when every stream connected,
verified every round and closed without error."""
import asyncio, json, random, socket, struct, sys, time

socks_host, socks_port = sys.argv[1].rsplit(":", 1)
target_host, target_port = sys.argv[2].rsplit(":", 1)
streams, seconds, chunk = int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
IO_TIMEOUT = 60.0


async def socks_connect():
    reader, writer = await asyncio.open_connection(socks_host, int(socks_port))
    writer.write(b"\x05\x01\x00")
    await writer.drain()
    if await reader.readexactly(2) != b"\x05\x00":
        raise RuntimeError("SOCKS server refused the no-authentication method")
    writer.write(b"\x05\x01\x00\x01" + socket.inet_aton(target_host) + struct.pack(">H", int(target_port)))
    await writer.drain()
    reply = await reader.readexactly(4)
    if reply[1] != 0:
        raise RuntimeError(f"SOCKS CONNECT failed with reply code {reply[1]}")
    skip = {1: 4, 4: 16}.get(reply[3])
    if skip is None:
        skip = (await reader.readexactly(1))[0]
    await reader.readexactly(skip + 2)
    return reader, writer


async def run_stream(index, all_connected, deadline_box, stats, errors):
    generator = random.Random(0x9057E2 + index)
    writer = None
    try:
        started = time.monotonic()
        reader, writer = await asyncio.wait_for(socks_connect(), IO_TIMEOUT)
        stats["connect_max"] = max(stats["connect_max"], time.monotonic() - started)
        stats["connected"] += 1
        if stats["connected"] == streams:
            deadline_box.append(time.monotonic() + seconds)
            all_connected.set()
        await all_connected.wait()
        moved = 0
        while time.monotonic() < deadline_box[0]:
            payload = generator.randbytes(chunk)
            writer.write(payload)
            await writer.drain()
            echoed = await asyncio.wait_for(reader.readexactly(chunk), IO_TIMEOUT)
            if echoed != payload:
                raise RuntimeError(f"echoed bytes differ after {moved} good bytes")
            moved += chunk
        stats["bytes"].append(moved)
        writer.close()
        await writer.wait_closed()
        stats["verified"] += 1
    except Exception as error:  # every failure is reported, none ends the run early
        errors.append(f"stream {index}: {type(error).__name__}: {error}")
        if not all_connected.is_set() and stats["connected"] + len(errors) >= streams:
            deadline_box.append(time.monotonic() + seconds)
            all_connected.set()
        if writer is not None:
            writer.close()


async def main():
    all_connected = asyncio.Event()
    deadline_box, errors = [], []
    stats = {"connected": 0, "verified": 0, "bytes": [], "connect_max": 0.0}
    started = time.monotonic()
    await asyncio.gather(*(run_stream(i, all_connected, deadline_box, stats, errors) for i in range(streams)))
    moved = stats["bytes"] or [0]
    result = {"streams": streams, "connected": stats["connected"], "verified": stats["verified"],
              "bytes_total": sum(stats["bytes"]), "bytes_min": min(moved), "bytes_max": max(moved),
              "connect_max_seconds": round(stats["connect_max"], 2),
              "elapsed_seconds": round(time.monotonic() - started, 1),
              "error_count": len(errors), "errors": errors[:20]}
    print("RESULT " + json.dumps(result), flush=True)
    return 0 if stats["verified"] == streams and not errors else 1

sys.exit(asyncio.run(main()))
