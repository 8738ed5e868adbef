"""An MQTT 3.1.1 broker of known capacity: it acknowledges at most CAPACITY QoS 1 messages a second.

Just enough of MQTT for publishers: CONNECT/CONNACK, PUBLISH/PUBACK, PINGREQ/PINGRESP, DISCONNECT (and
SUBACK for a subscription, delivering nothing). Every PUBLISH takes a token from one bucket refilled at
CAPACITY a second (a burst of CAPACITY / 20); without a token it waits in line, first come first served.
So acknowledgements stop following the offered rate exactly at CAPACITY, and their latency climbs.

usage: python capacity_broker.py PORT CAPACITY
"""

import asyncio
import sys

from bucket import Bucket


async def read_packet(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    first = (await reader.readexactly(1))[0]
    length, shift = 0, 0
    while True:
        b = (await reader.readexactly(1))[0]
        length |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    return first, await reader.readexactly(length)


async def main(port: int, capacity: float) -> None:
    bucket = Bucket(capacity)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        acks: asyncio.Queue[bytes | None] = asyncio.Queue()

        async def acknowledge() -> None:  # in arrival order, each once its token came
            while (pid := await acks.get()) is not None:
                await bucket.take()
                writer.write(b"\x40\x02" + pid)
                await writer.drain()

        acker = asyncio.create_task(acknowledge())
        try:
            while True:
                first, body = await read_packet(reader)
                kind, qos = first >> 4, (first >> 1) & 3
                if kind == 1:  # CONNECT
                    writer.write(b"\x20\x02\x00\x00")
                elif kind == 3:  # PUBLISH
                    topic_len = int.from_bytes(body[:2], "big")
                    if qos:
                        acks.put_nowait(body[2 + topic_len : 4 + topic_len])
                elif kind == 8:  # SUBSCRIBE: granted QoS 1 for each filter
                    filters, i = 0, 2
                    while i < len(body):
                        i += 2 + int.from_bytes(body[i : i + 2], "big") + 1
                        filters += 1
                    writer.write(bytes([0x90, 2 + filters]) + body[:2] + b"\x01" * filters)
                elif kind == 12:  # PINGREQ
                    writer.write(b"\xd0\x00")
                elif kind == 14:  # DISCONNECT
                    break
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            acks.put_nowait(None)
            acker.cancel()
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=4096)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2])))
