"""An HTTP/1.1 keep-alive server that answers every request after sleeping exactly DELAY_MS
(time.sleep: about 0.1 ms late at most on Linux), a thread per connection. A process of its own, so
that the tests' own process keeps no threads (Locust's gevent patching, imported later by some tests,
deadlocks on imports when threads are running).

With BODY_DELAY_MS, the response's head goes out after DELAY_MS and its body BODY_DELAY_MS later (two
sends, TCP_NODELAY: two segments), so that a client's time to first byte and its time receiving are
both known.

`GET /__late` answers how late the answers since the last such request went out (JSON: their count
and mean lateness in ms beyond DELAY_MS, from the request's last byte read to the answer's send), and
starts the count again: a loaded host makes the server late, and a test can take that out.

usage: python delay_server.py PORT DELAY_MS [BODY_DELAY_MS]; prints "ready" once it listens.
"""

import json
import socket
import sys
import threading
import time

from listener import heads, thread_per_connection

lock = threading.Lock()
late = [0, 0.0]  # answers since the last GET /__late, and their summed lateness in seconds


def serve(conn, delay, body_delay):
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with conn:
        for head in heads(conn):
            received = time.monotonic()
            if head.startswith(b"GET /__late "):
                with lock:
                    body = json.dumps({"count": late[0], "mean_late_ms": late[1] / max(late[0], 1) * 1000})
                    late[:] = [0, 0.0]
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body.encode()))
                continue
            time.sleep(delay)
            if body_delay is None:
                sent = time.monotonic()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                with lock:
                    late[0] += 1
                    late[1] += sent - received - delay
            else:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n")
                time.sleep(body_delay)
                conn.sendall(b"ok")


def main(port, delay_ms, body_delay_ms=None):
    body_delay = None if body_delay_ms is None else body_delay_ms / 1000
    thread_per_connection(port, serve, delay_ms / 1000, body_delay)


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]), *(float(a) for a in sys.argv[3:4]))
