"""An HTTP/1.1 keep-alive server that answers at once with the moment it sends: the body is
time.monotonic() read just before the response is written (CLOCK_MONOTONIC, the clock of the client's
time.monotonic() too). A client's response time can then be checked against when the response truly
left, not against the client's own reading of it. asyncio, one thread.

usage: python stamp_server.py PORT [CERT KEY]; with a certificate it serves https. Prints "ready"
once it listens.
"""

import asyncio
import ssl
import sys
import time


class Stamp(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.buf = b""

    def data_received(self, data):
        self.buf += data
        while b"\r\n\r\n" in self.buf:
            _, self.buf = self.buf.split(b"\r\n\r\n", 1)
            body = repr(time.monotonic()).encode()
            # With nothing queued, write() sends at once: the kernel receives it within this call.
            self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))


async def main(port, cert=None, key=None):
    tls = None
    if cert:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(cert, key)
    server = await asyncio.get_running_loop().create_server(Stamp, "127.0.0.1", port, backlog=1024, ssl=tls)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), *sys.argv[2:]))
