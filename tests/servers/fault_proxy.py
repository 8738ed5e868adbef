"""A TCP proxy that injects one kind of fault between a client and a real server, for the fault suite.

    python fault_proxy.py LISTEN_PORT UPSTREAM_PORT FAULT [ARG] [--every N] [--skip K]

Bytes are relayed both ways unchanged (so it works for HTTP/1.1, HTTP/2 over TLS and MQTT alike) except
for the fault, applied to the server-to-client direction of every N-th connection (default: all) after
the first K (default 0: `--skip 1` spares a client's preflight connection, so that the fault hits its
run). A BYTES past a TLS handshake (or an MQTT CONNACK) puts the fault mid-connection, after some answers:
- latency MS     each chunk from the server is held MS milliseconds
- reset BYTES    after BYTES from the server, the client's connection is reset (RST, SO_LINGER 0)
- halfclose [BYTES]  the request goes through, and the first BYTES of the answer (default none), then
                 the proxy sends FIN to the client and nothing else; the client's bytes still reach
                 the server
- truncate BYTES the first BYTES of the server's answer go through, then the connection closes (FIN);
                 what the client still sends is read and dropped (a close with unread bytes would
                 be a reset, and HTTP/2 and MQTT clients keep sending)
- stall [BYTES]  nothing from the server after its first BYTES (default none) ever reaches the client;
                 the connection stays open
- bandwidth BPS  the server's bytes reach the client at BPS bytes a second
- none           a plain relay

`GET /__faults` on the proxy's own port is not special: everything goes upstream. The proxy prints
"ready" once it listens.
"""

import asyncio
import contextlib
import socket
import struct
import sys
import time


async def relay(reader, writer, delay=0.0, budget=None, bandwidth=None):
    """Copies reader to writer; returns the bytes copied (stops after `budget` if given)."""
    copied = 0
    started = time.monotonic()
    while True:
        want = 65536 if budget is None else max(0, min(65536, budget - copied))
        if budget is not None and want == 0:
            return copied
        data = await reader.read(want)
        if not data:
            return copied
        if delay:
            await asyncio.sleep(delay)
        if bandwidth:
            copied_after = copied + len(data)
            due = started + copied_after / bandwidth
            await asyncio.sleep(max(0.0, due - time.monotonic()))
        writer.write(data)
        await writer.drain()
        copied += len(data)


async def drain(reader):
    """Reads and drops bytes until the peer closes."""
    while await reader.read(65536):
        pass


def reset(writer):
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def main(listen, upstream, fault, arg, every, skip):
    count = 0

    async def handle(c_reader, c_writer):
        nonlocal count
        count += 1
        faulty = count > skip and (count - skip) % every == 0
        try:
            u_reader, u_writer = await asyncio.open_connection("127.0.0.1", upstream)
        except OSError:
            c_writer.close()
            return
        up = asyncio.create_task(relay(c_reader, u_writer))
        try:
            if not faulty or fault == "none":
                await relay(u_reader, c_writer)
            elif fault == "latency":
                await relay(u_reader, c_writer, delay=arg / 1000)
            elif fault == "bandwidth":
                await relay(u_reader, c_writer, bandwidth=arg)
            elif fault == "reset":
                await relay(u_reader, c_writer, budget=int(arg))
                reset(c_writer)
                return
            elif fault == "truncate":
                await relay(u_reader, c_writer, budget=int(arg))
                up.cancel()
                with contextlib.suppress(asyncio.CancelledError, ConnectionError, OSError):
                    await up
                c_writer.write_eof()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(drain(c_reader), 5)
            elif fault == "halfclose":
                await relay(u_reader, c_writer, budget=int(arg))
                await asyncio.sleep(0.05)  # let the request reach the server
                c_writer.write_eof()
                await asyncio.sleep(30)
            elif fault == "stall":
                await relay(u_reader, c_writer, budget=int(arg))
                await asyncio.sleep(3600)
            c_writer.close()
        except (ConnectionError, OSError):
            pass
        finally:
            up.cancel()
            u_writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", listen, backlog=4096)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    args = sys.argv[1:]
    options = {"--every": 1, "--skip": 0}
    for name in options:
        if name in args:
            i = args.index(name)
            options[name] = int(args[i + 1])
            del args[i : i + 2]
    listen, upstream, fault = int(args[0]), int(args[1]), args[2]
    arg = float(args[3]) if len(args) > 3 else 0.0
    asyncio.run(main(listen, upstream, fault, arg, options["--every"], options["--skip"]))
