"""An HTTP/1.1 keep-alive server that answers at once with the moment it sends: the body is
time.monotonic() read just before the response is written (CLOCK_MONOTONIC, the clock of the client's
time.monotonic() too). A client's response time can then be checked against when the response truly
left, not against the client's own reading of it.

GET /hop redirects to /?hop=T, T the redirect's own send time; the answer there is then
"T RECEIVED SENT": the hop's send, when the kernel received the second request (its receive stamp,
SO_TIMESTAMPNS, on the monotonic clock), and when this server answered it.

Plain HTTP: a thread per connection reading with recvmsg, for the stamps. With a certificate (https):
asyncio, which serves TLS but cannot stamp, and so does not serve /hop.

usage: python stamp_server.py PORT [CERT KEY]; prints "ready" once it listens.
"""

import asyncio
import socket
import ssl
import struct
import sys
import threading
import time

from listener import listening

SO_TIMESTAMPNS = 35  # Linux's <asm-generic/socket.h>; the cmsg type is the same (SCM_TIMESTAMPNS)


def answer(path, received):
    """The response to a request for `path`, the kernel having received it at `received`."""
    if path == b"/hop":
        return b"HTTP/1.1 302 Found\r\nLocation: /?hop=%r\r\nContent-Length: 0\r\n\r\n" % time.monotonic()
    if path.startswith(b"/?hop="):
        body = b"%s %r %r" % (path[6:], received, time.monotonic())
    else:
        body = repr(time.monotonic()).encode()
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def serve(conn):
    with conn:
        conn.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        buf, received = b"", None
        while True:
            data, ancillary, _, _ = conn.recvmsg(65536, socket.CMSG_SPACE(16))
            if not data:
                return
            buf += data
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", payload)
                    received = time.monotonic() - (time.time() - (sec + nsec / 1e9))
            while b"\r\n\r\n" in buf:
                head, buf = buf.split(b"\r\n\r\n", 1)
                # With nothing queued, sendall sends at once: the kernel receives it within this call.
                conn.sendall(answer(head.split(b" ", 2)[1], received if received is not None else time.monotonic()))


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
    srv = listening(port, 1024)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    if len(sys.argv) > 2:
        asyncio.run(main_tls(int(sys.argv[1]), *sys.argv[2:]))
    else:
        main(int(sys.argv[1]))
