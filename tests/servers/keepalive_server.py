"""An HTTP/1.1 keep-alive server whose connections end or answer in the ways a client that reads a
response in one go must leave to its full exchange (tests/test_native_users.py, the engine's passes:
script/native.rs `receive_now`). A thread per connection; every answer is a 200 with the body "hello".

MODE is one of:
  close-after-3    the connection is closed, without a word, after its third answer (the client finds it
                   closed when it next sends, after thinking)
  announce-3       the third answer on a connection says `Connection: close`, then the server closes it
  chunked          every body is sent chunked, in two chunks
  cookie           the first answer on a connection sets the cookie `c=1`
  split            the head goes out, the body 5 ms later (two segments)

`GET /__log` answers what it received since the last such request (JSON: a list of [connection number,
had a Cookie header]) and starts the list again; it is not itself listed.

usage: python keepalive_server.py PORT MODE; prints "ready" once it listens.
"""

import itertools
import json
import socket
import sys
import threading
import time

from listener import heads, listening

lock = threading.Lock()
log = []  # [connection, had a cookie] per request answered since the last GET /__log
BODY = b"hello"


def answer(conn, mode, served):
    """The answer to the `served`-th request (from 1) on `conn`; whether the connection goes on."""
    plain = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n" % len(BODY)
    if mode == "announce-3" and served == 3:
        conn.sendall(plain + b"Connection: close\r\n\r\n" + BODY)
        return False
    if mode == "chunked":
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n")
        return True
    if mode == "cookie" and served == 1:
        conn.sendall(plain + b"Set-Cookie: c=1; Path=/\r\n\r\n" + BODY)
        return True
    if mode == "split":
        conn.sendall(plain + b"\r\n")
        time.sleep(0.005)
        conn.sendall(BODY)
        return True
    conn.sendall(plain + b"\r\n" + BODY)
    return not (mode == "close-after-3" and served == 3)


def serve(conn, number, mode):
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with conn:
        served = 0
        for head in heads(conn):
            if head.startswith(b"GET /__log "):
                with lock:
                    body = json.dumps(log).encode()
                    log.clear()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                continue
            served += 1
            cookie = any(line.lower().startswith(b"cookie:") for line in head.split(b"\r\n")[1:])
            with lock:
                log.append([number, cookie])
            if not answer(conn, mode, served):
                return


def main(port, mode):
    srv = listening(port)
    for number in itertools.count():
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn, number, mode), daemon=True).start()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
