"""Server-Sent Events over HTTP/2 with prior knowledge (h2c), on the `h2` library (a thread per
connection, its streams answered one after another): GET /sse?events=N&ms=M&first=F sends N events,
the first F ms after the request was read (default M), each next M ms (default 20) after the one
before, each in a DATA frame of its own, then ends the stream. GET /__sent answers JSON: events sent
and the sends' gaps in ms since the last /__sent (over HTTP/2, or HTTP/1.1 for a test's plain GET).
Any other path: 404.

usage: python sse_h2_server.py PORT; prints "ready" once it listens.
"""

import contextlib
import json
import socket
import sys
import threading
import time
from urllib.parse import parse_qs, urlsplit

import h2.config
import h2.connection
import h2.events
from listener import thread_per_connection

lock = threading.Lock()
sent = {"events": 0, "streams": 0, "gaps_ms": []}


def answer(conn, h2c, stream_id, path):
    url = urlsplit(path)
    q = {k: v[0] for k, v in parse_qs(url.query).items()}
    if url.path == "/__sent":
        body = take_sent()
        h2c.send_headers(stream_id, [(":status", "200"), ("content-type", "application/json")])
        h2c.send_data(stream_id, body, end_stream=True)
        conn.sendall(h2c.data_to_send())
        return
    if url.path != "/sse":
        h2c.send_headers(stream_id, [(":status", "404")], end_stream=True)
        conn.sendall(h2c.data_to_send())
        return
    n, ms = int(q.get("events", 5)), float(q.get("ms", 20))
    first = float(q.get("first", ms))
    h2c.send_headers(stream_id, [(":status", "200"), ("content-type", "text/event-stream")])
    conn.sendall(h2c.data_to_send())
    with lock:
        sent["streams"] += 1
    last = None
    for i in range(n):
        time.sleep((first if i == 0 else ms) / 1000)
        h2c.send_data(stream_id, f"id: {i}\ndata: event {i}\n\n".encode(), end_stream=i == n - 1)
        conn.sendall(h2c.data_to_send())
        now = time.monotonic()
        with lock:
            sent["events"] += 1
            if last is not None:
                sent["gaps_ms"].append((now - last) * 1000)
        last = now


def take_sent():
    with lock:
        body = json.dumps(sent).encode()
        sent.update(events=0, streams=0, gaps_ms=[])
    return body


def serve(conn):
    h2c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False))
    h2c.initiate_connection()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each frame its own segment, at once
    with contextlib.suppress(OSError), conn:
        data = conn.recv(65536)
        if data.startswith(b"GET /__sent "):  # a test's HTTP/1.1 GET of the ground truth
            body = take_sent()
            conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            return
        conn.sendall(h2c.data_to_send())
        while data:
            for event in h2c.receive_data(data):
                if isinstance(event, h2.events.RequestReceived):
                    path = dict(event.headers)[b":path"].decode()
                    answer(conn, h2c, event.stream_id, path)
                elif isinstance(event, h2.events.DataReceived):
                    h2c.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            conn.sendall(h2c.data_to_send())
            data = conn.recv(65536)


def main(port):
    thread_per_connection(port, serve)


if __name__ == "__main__":
    main(int(sys.argv[1]))
