"""An HTTP/1.1 keep-alive server that answers at once with the moment it sends: the body is
time.monotonic() read just before the response is written (CLOCK_MONOTONIC, the clock of the client's
time.monotonic() too). A client's response time can then be checked against when the response truly
left, not against the client's own reading of it.

GET /hop redirects to /?hop=T, T the redirect's own send time; the answer there is then
"T RECEIVED SENT": the hop's send, when the kernel received the second request (its receive stamp,
SO_TIMESTAMPNS, on the monotonic clock), and when this server answered it.

Plain HTTP: one thread and a selector, reading with recvmsg for the stamps. With a certificate (https):
asyncio, which serves TLS but cannot stamp, and so does not serve /hop.

usage: python stamp_server.py PORT [CERT KEY]; prints "ready" once it listens.
"""

import asyncio
import selectors
import socket
import ssl
import sys
import time

from listener import listening, recv_stamped, stamp_receives


def answer(path, received):
    """The response to a request for `path`, the kernel having received it at `received`."""
    if path == b"/hop":
        return b"HTTP/1.1 302 Found\r\nLocation: /?hop=%r\r\nContent-Length: 0\r\n\r\n" % time.monotonic()
    if path.startswith(b"/?hop="):
        body = b"%s %r %r" % (path[6:], received, time.monotonic())
    else:
        body = repr(time.monotonic()).encode()
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def on_readable(conn, bufs):
    """Reads what came on `conn` (with its kernel receive stamp) and answers each complete request."""
    try:
        data, stamp = recv_stamped(conn)
    except ConnectionError:
        data = b""
    if not data:
        return False
    received = time.monotonic()
    if stamp is not None:
        received -= time.time() - stamp
    buf = bufs[conn] + data
    while b"\r\n\r\n" in buf:
        head, buf = buf.split(b"\r\n\r\n", 1)
        # A short response on an idle socket: send() takes it whole, and the kernel receives it within.
        conn.send(answer(head.split(b" ", 2)[1], received))
    bufs[conn] = buf
    return True


class Tls(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.buf = b""

    def data_received(self, data):
        self.buf += data
        while b"\r\n\r\n" in self.buf:
            head, self.buf = self.buf.split(b"\r\n\r\n", 1)
            self.transport.write(answer(head.split(b" ", 2)[1], time.monotonic()))


async def main_tls(port, cert, key):
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    server = await asyncio.get_running_loop().create_server(Tls, "127.0.0.1", port, backlog=1024, ssl=tls)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


def main(port):
    """One thread, one selector: light beside the generator under test, whose CPU it shares."""
    sel = selectors.DefaultSelector()
    srv = listening(port, 1024)
    sel.register(srv, selectors.EVENT_READ)
    bufs = {}
    while True:
        for key, _ in sel.select():
            if key.fileobj is srv:
                conn, _ = srv.accept()
                stamp_receives(conn)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                bufs[conn] = b""
                sel.register(conn, selectors.EVENT_READ)
            elif not on_readable(key.fileobj, bufs):
                sel.unregister(key.fileobj)
                key.fileobj.close()
                del bufs[key.fileobj]


if __name__ == "__main__":
    if len(sys.argv) > 2:
        asyncio.run(main_tls(int(sys.argv[1]), *sys.argv[2:]))
    else:
        main(int(sys.argv[1]))
