"""What the test servers here share: a TCP listener on 127.0.0.1:PORT, and "ready" printed once it
listens (what tests/support.py `serving` waits for); reads that carry the kernel's receive time."""

import socket
import struct
import threading

SO_TIMESTAMPNS = 35  # Linux's <asm-generic/socket.h>, also the cmsg type (SCM_TIMESTAMPNS); Python lacks it


def listening(port, backlog=128):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(backlog)
    print("ready", flush=True)
    return listener


def stamp_receives(conn):
    """From now on the kernel notes when each of `conn`'s segments arrives (`recv_stamped` reads it)."""
    conn.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)


def recv_stamped(conn, size=65536):
    """One recvmsg: the bytes, and when the kernel received them (wall-clock seconds; None unstamped)."""
    data, ancillary, _, _ = conn.recvmsg(size, socket.CMSG_SPACE(16))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", payload[:16])
            return data, sec + nsec / 1e9
    return data, None


def heads(conn):
    """Each request head `conn` sends (its bytes up to the blank line), as each comes; ends when the
    client closes. (These servers' requests are GETs: a body its Content-Length gives is read past.)"""
    for head, _ in requests(conn):
        yield head


def requests(conn):
    """Each request `conn` sends, as (head, body): its head up to the blank line and the body its
    Content-Length gives (none without); ends when the client closes."""
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            data = conn.recv(65536)
            if not data:
                return
            buf += data
        head, buf = buf.split(b"\r\n\r\n", 1)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(buf) < length:
            data = conn.recv(65536)
            if not data:
                return
            buf += data
        body, buf = buf[:length], buf[length:]
        yield head, body


def thread_per_connection(port, serve, *args):
    """Listens on 127.0.0.1:PORT and serves each connection in a thread of its own: serve(conn, *args)."""
    srv = listening(port)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn, *args), daemon=True).start()
