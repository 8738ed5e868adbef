"""HTTP/1.1 servers whose capacity is set the three ways real servers' is, each measuring its own capacity
as it serves (the ground truth of `--find-limit`'s tests):

- `slots K MS`: an async server holding each request MS ms (awaited, as a database call would be) in one
  of K slots; a request without a free slot waits for one. Capacity K / hold: K = 80 and MS = 20 serve
  4,000 requests a second, and only a client with more than 80 requests in flight can see it (Little's
  law). The measured capacity is K over the mean time a slot was held (the sleep's overshoot included).
- `cpu MS`: one thread spending MS ms of CPU on each request. Capacity 1 / (MS + the server's own cost per
  request); measured as requests served per CPU-second the process used (`time.process_time`), which
  counts that cost too.
- `pool K MS`: K worker threads, each accepting one connection, answering its one request after a
  blocking MS ms and closing it, as gunicorn's sync workers do (`Connection: close`). Capacity K / cycle;
  measured as K over the mean cycle from accept to close.

usage: python known_capacity.py PORT MODE ...   (prints "ready" once it listens)
`GET /__capacity` answers the measured capacity (requests a second, from what it has served so far),
`GET /__served` the requests served; neither is counted nor held.
"""

import asyncio
import socket
import sys
import threading
import time

from listener import listening

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Type: text/plain\r\n\r\nok\n"
CLOSE = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nok\n"


class Tally:
    """Requests served and the time they took of the resource that limits the server."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.served = 0
        self.busy = 0.0  # seconds of the limiting resource (slot, CPU, worker) the requests used

    def add(self, busy: float) -> None:
        with self.lock:
            self.served += 1
            self.busy += busy

    def answer(self, path: bytes, capacity: float) -> bytes:
        body = (str(self.served) if path == b"/__served" else f"{capacity:.1f}").encode()
        return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def own_path(head: bytes) -> bytes | None:
    """The path of a request for the server's own numbers, else None."""
    line = head.split(b"\r\n", 1)[0].split(b" ")
    return line[1] if len(line) > 1 and line[1] in (b"/__capacity", b"/__served") else None


def serve_async(listener: socket.socket, tally: Tally, handle, capacity) -> None:
    """Keep-alive HTTP/1.1 on one asyncio loop; `handle()` is awaited for each request."""

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = own_path(head)
                if path is not None:
                    writer.write(tally.answer(path, capacity()))
                else:
                    await handle()
                    writer.write(RESPONSE)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(connection, sock=listener, backlog=4096)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def slots(listener: socket.socket, k: int, ms: float) -> None:
    tally = Tally()
    gate: list[asyncio.Semaphore] = []

    async def handle() -> None:
        if not gate:
            gate.append(asyncio.Semaphore(k))
        async with gate[0]:
            began = time.monotonic()
            await asyncio.sleep(ms / 1000)
            tally.add(time.monotonic() - began)

    serve_async(listener, tally, handle, lambda: k * tally.served / tally.busy if tally.busy else k * 1000 / ms)


def cpu(listener: socket.socket, ms: float) -> None:
    tally = Tally()
    began = time.process_time()

    async def handle() -> None:
        until = time.thread_time() + ms / 1000
        while time.thread_time() < until:
            pass
        tally.add(0.0)

    def capacity() -> float:
        used = time.process_time() - began
        return tally.served / used if tally.served else 1000 / ms

    serve_async(listener, tally, handle, capacity)


def pool(listener: socket.socket, k: int, ms: float) -> None:
    tally = Tally()

    def capacity() -> float:
        return k * tally.served / tally.busy if tally.busy else k * 1000 / ms

    def worker() -> None:
        while True:
            conn, _ = listener.accept()
            began = time.monotonic()
            try:
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    head += chunk
                if not head:
                    continue
                path = own_path(head)
                if path is not None:
                    conn.sendall(tally.answer(path, capacity()))
                    continue
                time.sleep(ms / 1000)
                conn.sendall(CLOSE)
            except OSError:
                continue
            finally:
                conn.close()
            tally.add(time.monotonic() - began)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(k)]
    for t in threads:
        t.start()
    threads[0].join()


if __name__ == "__main__":
    port, mode, *rest = sys.argv[1:]
    sock = listening(int(port), backlog=4096)
    if mode == "slots":
        slots(sock, int(rest[0]), float(rest[1]))
    elif mode == "cpu":
        cpu(sock, float(rest[0]))
    elif mode == "pool":
        pool(sock, int(rest[0]), float(rest[1]))
    else:
        sys.exit(f"unknown mode {mode}")
