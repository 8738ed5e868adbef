"""A small HTTP/1.1 server for behaviours nginx won't show: usage `odd_server.py PORT`.

  /ok          200 at once
  /stall       200, except that once a second the server stalls for 500 ms: requests that arrive
               during the stall are answered when it ends.
  /close-mid   announces 100 bytes, sends 10, closes the connection
  /headers     200 with the request's header lines as the body
  /echo        200 with the request body; X-Method says the method, X-Query the query string
  /set-cookie  200 that sets the cookie `session=abc123`
  /redirect    302 to /ok
  /loop        301 to itself, forever
  /login       302 to /headers that sets the cookie `auth=token1`
  /status/N    status N
  /graphql     POST a GraphQL JSON body: {"data": ...}, or {"errors": [...]} when the query says "broken"
  /__counts    JSON {path: requests served}
  /__open      JSON number of client connections open, besides the one asking
  /__truth     JSON list of the /stall latencies in microseconds: from the kernel's receive timestamp
               of the request (SO_TIMESTAMPNS, so time spent queued in the socket counts) to the
               moment the response was handed to the kernel.

One thread, one selector loop, so the ground truth has no scheduler of ours in between.
"""

import contextlib
import heapq
import json
import selectors
import socket
import sys
import time
from http import HTTPStatus

from listener import listening, recv_stamped, stamp_receives

STALL_PERIOD, STALL_START, STALL_LENGTH = 1.0, 0.25, 0.5
START = time.time()
truth_us = []
counts = {}


def stall_ends_at(t):
    """When the stall covering wall time `t` ends, or None (stalls fill [k+0.25, k+0.75) from start)."""
    phase = (t - START) % STALL_PERIOD
    if STALL_START <= phase < STALL_START + STALL_LENGTH:
        return t + (STALL_START + STALL_LENGTH - phase)
    return None


def response(status, body, extra=""):
    # The standard phrase, as real servers send it (requests' HTTPError quotes the server's phrase).
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Status"
    return f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


class Conn:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.arrived = None  # kernel timestamp of the first byte of the pending request


def main(port):
    sel = selectors.DefaultSelector()
    listener = listening(port, 4096)
    listener.setblocking(False)
    sel.register(listener, selectors.EVENT_READ)
    held = []  # (release time, seq, conn, arrival) of stalled /stall responses
    seq = 0

    def send(conn, data, arrived=None, head_only=False):
        if head_only:  # a response to HEAD has no body
            data = data[: data.index(b"\r\n\r\n") + 4]
        try:
            conn.sock.sendall(data)
        except OSError:
            return
        if arrived is not None:
            truth_us.append(int((time.time() - arrived) * 1e6))

    def close(conn):
        sel.unregister(conn.sock)
        conn.sock.close()

    def serve(conn, head, body, arrived):
        nonlocal seq
        lines = head.decode("latin-1").split("\r\n")
        method, target = lines[0].split(" ")[:2]
        path, _, query = target.partition("?")
        counts[path] = counts.get(path, 0) + 1
        if path == "/stall":
            end = stall_ends_at(arrived)
            if end is None:
                send(conn, response(200, b"ok\n"), arrived)
            else:
                seq += 1
                heapq.heappush(held, (end, seq, conn, arrived))
        elif path == "/ok":
            send(conn, response(200, b"ok\n"), head_only=method == "HEAD")
        elif path == "/close-mid":
            send(conn, b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
            close(conn)
            return False
        elif path == "/headers":
            send(conn, response(200, "\r\n".join(lines[1:]).encode()))
        elif path == "/echo":
            send(conn, response(200, body, f"X-Method: {method}\r\nX-Query: {query}\r\n"))
        elif path == "/set-cookie":
            send(conn, response(200, b"ok\n", "Set-Cookie: session=abc123; Path=/\r\n"))
        elif path == "/redirect":
            send(conn, response(302, b"", "Location: /ok\r\n"))
        elif path == "/loop":
            send(conn, response(301, b"", "Location: /loop\r\n"))
        elif path == "/login":
            send(conn, response(302, b"", "Location: /headers\r\nSet-Cookie: auth=token1; HttpOnly\r\n"))
        elif path.startswith("/status/"):
            send(conn, response(int(path.rsplit("/", 1)[1]), b"status\n"))
        elif path == "/graphql":
            request = json.loads(body or b"{}")
            if "broken" in request.get("query", ""):
                answer = {"errors": [{"message": "Cannot query field 'broken'"}], "data": None}
            else:
                answer = {"data": {"echo": request.get("variables"), "operation": request.get("operationName")}}
            send(conn, response(200, json.dumps(answer).encode(), "Content-Type: application/json\r\n"))
        elif path == "/__counts":
            send(conn, response(200, json.dumps(counts).encode(), "Connection: close\r\n"))
            close(conn)
            return False
        elif path == "/__open":
            send(conn, response(200, json.dumps(len(sel.get_map()) - 2).encode(), "Connection: close\r\n"))
            close(conn)
            return False
        elif path == "/__truth":
            send(conn, response(200, json.dumps(truth_us).encode(), "Connection: close\r\n"))
            close(conn)
            return False
        else:
            send(conn, response(404, b"not found\n"))
        return True

    while True:
        timeout = max(0.0, held[0][0] - time.time()) if held else None
        for key, _ in sel.select(timeout):
            if key.fileobj is listener:
                try:
                    while True:
                        s, _ = listener.accept()
                        s.setblocking(False)
                        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        stamp_receives(s)
                        sel.register(s, selectors.EVENT_READ, Conn(s))
                except BlockingIOError:
                    pass
                continue
            conn = key.data
            try:
                data, stamp = recv_stamped(conn.sock)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:
                close(conn)
                continue
            if conn.arrived is None:
                conn.arrived = time.time() if stamp is None else stamp
            conn.buf += data
            while b"\r\n\r\n" in conn.buf:
                head, _, rest = conn.buf.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if len(rest) < length:
                    break
                body, conn.buf = rest[:length], rest[length:]
                arrived, conn.arrived = conn.arrived, (conn.arrived if conn.buf else None)
                if not serve(conn, head, body, arrived):
                    break
        now = time.time()
        while held and held[0][0] <= now:
            _, _, conn, arrived = heapq.heappop(held)
            send(conn, response(200, b"ok\n"), arrived)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main(int(sys.argv[1]))
