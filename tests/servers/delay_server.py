"""An HTTP/1.1 keep-alive server that answers every request after sleeping exactly DELAY_MS
(time.sleep: about 0.1 ms late at most on Linux), a thread per connection. A process of its own, so
that the tests' own process keeps no threads (Locust's gevent patching, imported later by some tests,
deadlocks on imports when threads are running).

usage: python delay_server.py PORT DELAY_MS; prints "ready" once it listens.
"""

import sys
import threading
import time

from listener import listening


def serve(conn, delay):
    with conn:
        buf = b""
        while True:
            while b"\r\n\r\n" not in buf:
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
            _, buf = buf.split(b"\r\n\r\n", 1)
            time.sleep(delay)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")


def main(port, delay_ms):
    srv = listening(port)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn, delay_ms / 1000), daemon=True).start()


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]))
