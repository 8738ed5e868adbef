"""A Server-Sent Events server of known timing, a thread per connection (plain sockets, TCP_NODELAY:
each event its own segment), that records what it sent. A process of its own (see delay_server.py).

GET /sse?events=N&ms=M&first=F&framing=F&cut=K&reset=1&lines=crlf&status=S
    N events (default 5), the first F ms (default M) after the request was read, each next M ms
    (default 20) after the one before (time.sleep: at most about 0.1 ms late on an idle Linux host;
    the sends' real gaps are recorded). framing: chunked (default: an event per chunk, then the last
    chunk), length (Content-Length of the whole stream, its events sent as they fall due) or close (no
    length: the stream ends when the server closes). cut=K: the connection closed after K events, without
    the stream's end (reset=1: reset, SO_LINGER 0). lines=crlf: lines end in CRLF. Each event is
    `id: I`, `data: event I` and a comment line, then the blank line. status=503: the same body
    under a 503 (as a server shedding load may answer an EventSource).
GET /stall?events=K
    K events 10 ms apart, then nothing, the connection held open.
GET /silent
    no answer at all, the connection held open.
GET /huge
    one event whose data line never ends (64 KiB sends until the client goes).
POST /v1/chat/completions?first=F&ms=M&per=K
    An OpenAI-compatible chat completion streamed (its JSON body's `"stream": true`), of `max_tokens`
    (default 8) content chunks: the role-only chunk at once, the first content chunk F ms (default 50)
    after the request was read, each next M ms (default 20) after the one before, then the finish
    chunk, the usage chunk if `stream_options.include_usage` (its completion_tokens: K tokens a chunk,
    default 1) and `data: [DONE]`. Counted as events (each data line one) and as tokens.
GET /__sent
    JSON: events sent, streams begun and ended whole, the bytes GET /sse's streams sent (heads, framing,
    events), the sends' gaps in ms (within streams), content
    chunks sent and the usage tokens reported, and each completion's first content chunk's time after
    its request (ms), since the last GET /__sent; and starts the count again.
GET /__conns
    JSON: connections open now (the server has not seen them closed: a stream's is seen closed at its
    next send), and accepted since the server started.

usage: python sse_server.py PORT; prints "ready" once it listens.
"""

import contextlib
import json
import socket
import struct
import sys
import threading
import time
from urllib.parse import parse_qs, urlsplit

from listener import requests, thread_per_connection

CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
lock = threading.Lock()
EMPTY = {"events": 0, "streams": 0, "whole": 0, "gaps_ms": [], "tokens": 0, "usage": 0, "first_ms": [], "bytes": 0}
sent = json.loads(json.dumps(EMPTY))
conns = {"open": 0, "accepted": 0}


def event(i, eol):
    return f"id: {i}{eol}data: event {i}{eol}: a comment{eol}{eol}".encode()


def stream(conn, q):
    n, ms = int(q.get("events", 5)), float(q.get("ms", 20))
    first = float(q.get("first", ms))
    framing, cut = q.get("framing", "chunked"), int(q.get("cut", -1))
    eol = "\r\n" if q.get("lines") == "crlf" else "\n"
    status = {"200": "200 OK", "503": "503 Service Unavailable"}[q.get("status", "200")]
    head = f"HTTP/1.1 {status}\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    if framing == "chunked":
        head += "Transfer-Encoding: chunked\r\n"
    elif framing == "length":
        head += f"Content-Length: {sum(len(event(i, eol)) for i in range(n))}\r\n"
    else:
        head += "Connection: close\r\n"

    def send(data):
        conn.sendall(data)
        with lock:
            sent["bytes"] += len(data)

    send((head + "\r\n").encode())
    with lock:
        sent["streams"] += 1
    last = None
    for i in range(n):  # made as they go: an endless stream's (n = 1,000,000) would take seconds first
        e = event(i, eol)
        if i == cut:
            if q.get("reset") == "1":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()
            return False
        time.sleep((first if i == 0 else ms) / 1000)
        send(b"%x\r\n%s\r\n" % (len(e), e) if framing == "chunked" else e)
        now = time.monotonic()
        with lock:
            sent["events"] += 1
            if last is not None:
                sent["gaps_ms"].append((now - last) * 1000)
        last = now
    if framing == "chunked":
        send(b"0\r\n\r\n")
    with lock:
        sent["whole"] += 1
    if framing == "close":
        conn.close()
        return False
    return True


def completion(conn, q, req):
    """One streamed chat completion, as OpenAI's API sends one (the module's doc)."""
    read = time.monotonic()
    n, per = int(req.get("max_tokens", 8)), int(q.get("per", 1))
    first, ms = float(q.get("first", 50)), float(q.get("ms", 20))
    conn.sendall(CHUNKED_HEAD)
    with lock:
        sent["streams"] += 1

    def send(chunk):
        data = b"data: " + (chunk if isinstance(chunk, bytes) else json.dumps(chunk).encode()) + b"\n\n"
        conn.sendall(b"%x\r\n%s\r\n" % (len(data), data))
        with lock:
            sent["events"] += 1

    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": req.get("model", "m")}
    send({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]})
    last = None
    for i in range(n):
        time.sleep((first if i == 0 else ms) / 1000)
        send({**base, "choices": [{"index": 0, "delta": {"content": f" tok{i}"}, "finish_reason": None}]})
        now = time.monotonic()
        with lock:
            sent["tokens"] += 1
            if last is None:
                sent["first_ms"].append((now - read) * 1000)
            else:
                sent["gaps_ms"].append((now - last) * 1000)
        last = now
    send({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
    if (req.get("stream_options") or {}).get("include_usage"):
        usage = {"prompt_tokens": 5, "completion_tokens": n * per, "total_tokens": 5 + n * per}
        send({**base, "choices": [], "usage": usage})
        with lock:
            sent["usage"] += n * per
    send(b"[DONE]")
    conn.sendall(b"0\r\n\r\n")
    with lock:
        sent["whole"] += 1


def serve(conn):
    with lock:
        conns["open"] += 1
        conns["accepted"] += 1
    try:
        with contextlib.suppress(OSError):  # the client went mid-stream (a run's end, a test's cut)
            answer(conn)
    finally:
        with lock:
            conns["open"] -= 1


def answer(conn):
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with conn:
        for head, body in requests(conn):
            url = urlsplit(head.split(b" ")[1].decode())
            q = {k: v[0] for k, v in parse_qs(url.query).items()}
            if url.path == "/__sent":
                with lock:
                    body = json.dumps(sent).encode()
                    sent.update(json.loads(json.dumps(EMPTY)))
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            elif url.path == "/__conns":
                with lock:
                    body = json.dumps(conns).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            elif url.path == "/sse":
                if not stream(conn, q):
                    return
            elif url.path == "/v1/chat/completions":
                completion(conn, q, json.loads(body or b"{}"))
            elif url.path == "/stall":
                conn.sendall(CHUNKED_HEAD)
                for i in range(int(q.get("events", 1))):
                    e = event(i, "\n")
                    conn.sendall(b"%x\r\n%s\r\n" % (len(e), e))
                    time.sleep(0.01)
                wait_for_close(conn)
                return
            elif url.path == "/silent":
                wait_for_close(conn)
                return
            elif url.path == "/huge":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: ")
                try:
                    while True:
                        conn.sendall(b"x" * 65536)
                except OSError:
                    return
            else:
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")


def wait_for_close(conn):
    """Holds the connection, answering nothing, until the client closes it."""
    try:
        while conn.recv(65536):
            pass
    except OSError:
        pass


def main(port):
    thread_per_connection(port, serve)


if __name__ == "__main__":
    main(int(sys.argv[1]))
