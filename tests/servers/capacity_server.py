"""An HTTP/1.1 server of known capacity: it answers at most CAPACITY requests a second, whatever comes.

Every request takes a token from a bucket refilled at CAPACITY tokens a second (a burst of at most
CAPACITY / 20, 50 ms' worth); a request without a token waits in line for one. Below CAPACITY a request is
answered at once; above it the line grows by (offered - CAPACITY) requests a second, and so does the
wait: throughput stops following the offered load exactly at CAPACITY, and latency climbs without bound.
That is the "knee" `--find-limit` must find. Keep-alive, one asyncio loop.

usage: python capacity_server.py PORT CAPACITY
`GET /__served` answers how many requests were served (outside the capacity).
"""

import asyncio
import sys

from bucket import Bucket

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Type: text/plain\r\n\r\nok\n"


async def main(port: int, capacity: float) -> None:
    bucket = Bucket(capacity)
    served = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal served
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if head.startswith(b"GET /__served"):
                    body = str(served).encode()
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                    await writer.drain()
                    continue
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                if length:
                    await reader.readexactly(length)
                await bucket.take()
                served += 1
                writer.write(RESPONSE)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=4096)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2])))
