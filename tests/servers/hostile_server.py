"""A server that sends more than any client should keep: usage `hostile_server.py PORT MODE [LIMIT]`.

Every connection gets MODE's behaviour, on any path but /ok (HTTP/1.1: a plain 200, for a baseline),
until the client goes away or LIMIT bytes (default 512 MiB) have been sent; then the server closes that
connection. One thread a connection, so that an endless stream on one does not hold up the others.

HTTP/1.1:
  body-length   200 with Content-Length: LIMIT, then LIMIT bytes
  body-chunked  200, chunked, 64 KiB chunks without end
  body-close    200 delimited by the close, bytes without end
  chunk-line    200, chunked, a chunk size line whose extension never ends
  trailers      200, chunked, the last chunk, then a trailer line that never ends
  head          a status line, then one header line that never ends
  many-headers  200 with 10,000 header fields
  cookies       200 that sets a new cookie of LIMIT bytes (`cN=...`, N counting responses) on every
                response; GET /__cookies says the size of the Cookie header of each request (0: none)
  hops          /hop/K redirects to /hop/K+1 on the next of 20 more ports the server listens on, and
                /hop/20 is 200; GET /__open says the client connections open, besides those asking,
                once no connection has opened or closed for SETTLE_S (a count between two hops would
                hold closes whose threads have yet to run: the ground truth is the settled count);
                LIMIT, if given, is how many milliseconds each hop's response waits
HTTP/2 (prior knowledge; the client's preface, SETTINGS and a request's HEADERS, then):
  h2-continuation  HEADERS with :status 200 and no END_HEADERS, then CONTINUATION frames of 16 KiB
                   (each a literal header field, valid HPACK) without end
  h2-ping          PING frames without end, never reading what the client sends
  h2-body          200, then DATA frames without end, as fast as the client's flow control allows
MQTT (3.1.1 or 5, whichever the CONNECT asks):
  mqtt-big      CONNACK, then a PUBLISH announcing MQTT's largest remaining length (268,435,455
                bytes) and its bytes as they come
"""

import contextlib
import json
import socket
import sys
import threading
import time

from listener import listening

CHUNK = 64 * 1024
MODE = sys.argv[2] if len(sys.argv) > 2 else "body-length"
LIMIT = int(sys.argv[3]) if len(sys.argv) > 3 else 512 * 1024 * 1024
lock = threading.Lock()
connection = threading.local()  # this thread's connection (a thread each): whether it asked /__open
cookie_sizes = []  # the Cookie header's size of each request (cookies mode)
responses = 0
hop_ports = []
open_conns = 0
last_change = 0.0  # time.monotonic() of the last open or close
SETTLE_S = 0.1
HOP_WAIT_S = LIMIT / 1000 if MODE == "hops" and len(sys.argv) > 3 else 0.0


def stream(sock, head, piece, limit=LIMIT):
    """Sends `head`, then `piece` over and over until `limit` bytes in all (or the client leaves)."""
    sock.sendall(head)
    sent = len(head)
    while sent < limit:
        sock.sendall(piece)
        sent += len(piece)


def read_head(sock, buf):
    """(request head, rest) once a whole head has come; (None, buf) if the client closed first."""
    while b"\r\n\r\n" not in buf:
        data = sock.recv(65536)
        if not data:
            return None, buf
        buf += data
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head, rest


def respond(sock, status, body=b"", extra=""):
    head = f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    sock.sendall(head.encode() + body)


def http1(sock):
    global responses, open_conns, last_change
    buf = b""
    while True:
        head, buf = read_head(sock, buf)
        if head is None:
            return
        lines = head.decode("latin-1").split("\r\n")
        path = lines[0].split(" ")[1]
        ok = "HTTP/1.1 200 OK\r\n"
        if path == "/ok":
            respond(sock, 200, b"ok")
            continue
        if MODE == "body-length":
            stream(sock, f"{ok}Content-Length: {LIMIT}\r\n\r\n".encode(), b"x" * CHUNK, LIMIT)
        elif MODE == "body-chunked":
            stream(sock, f"{ok}Transfer-Encoding: chunked\r\n\r\n".encode(), b"%x\r\n" % CHUNK + b"x" * CHUNK + b"\r\n")
        elif MODE == "body-close":
            stream(sock, f"{ok}Connection: close\r\n\r\n".encode(), b"x" * CHUNK)
        elif MODE == "chunk-line":
            stream(sock, f"{ok}Transfer-Encoding: chunked\r\n\r\n1;ext=".encode(), b"x" * CHUNK)
        elif MODE == "trailers":
            stream(sock, f"{ok}Transfer-Encoding: chunked\r\n\r\n0\r\nX-Trailer: ".encode(), b"x" * CHUNK)
        elif MODE == "head":
            stream(sock, f"{ok}X-Endless: ".encode(), b"x" * CHUNK)
        elif MODE == "many-headers":
            fields = "".join(f"X-H{i}: v\r\n" for i in range(10_000))
            respond(sock, 200, b"ok", fields)
            continue
        elif MODE == "cookies" and path == "/__cookies":
            with lock:
                respond(sock, 200, json.dumps(cookie_sizes).encode())
            continue
        elif MODE == "cookies":
            cookies = [line.split(":", 1)[1].strip() for line in lines[1:] if line.lower().startswith("cookie:")]
            cookie = cookies[0] if cookies else ""
            with lock:
                cookie_sizes.append(len(cookie))
                responses += 1
                n = responses
            respond(sock, 200, b"ok", f"Set-Cookie: c{n}={'v' * LIMIT}; Path=/\r\n")
            continue
        elif MODE == "hops" and path == "/__open":
            if not getattr(connection, "asks", False):
                # The asker's connection leaves the count now, not at its close: a close the server's
                # thread notices late (a loaded host) would hold the last asker's in the next count.
                connection.asks = True
                with lock:
                    open_conns -= 1
                    last_change = time.monotonic()
            respond(sock, 200, json.dumps(settled_open()).encode())
            continue
        elif MODE == "hops" and path.startswith("/hop/"):
            k = int(path.rsplit("/", 1)[1])
            time.sleep(HOP_WAIT_S)
            if k >= len(hop_ports):
                respond(sock, 200, b"arrived")
            else:
                respond(sock, 302, b"", f"Location: http://127.0.0.1:{hop_ports[k]}/hop/{k + 1}\r\n")
            continue
        else:
            respond(sock, 404, b"no such mode or path")
            continue
        return  # the stream ended: close


def h2_frame(kind, flags, stream_id, payload):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream_id.to_bytes(4, "big") + payload


def hpack_int(first, prefix, value):
    top = (1 << prefix) - 1
    if value < top:
        return bytes([first | value])
    out, value = [first | top], value - top
    while value >= 128:
        out.append(value % 128 | 0x80)
        value //= 128
    return bytes([*out, value])


def h2_literal(name, value):
    """A literal header field without indexing, name and value spelled out (RFC 7541 6.2.2)."""
    return b"\x00" + hpack_int(0, 7, len(name)) + name + hpack_int(0, 7, len(value)) + value


class Windows:
    """The client's flow-control windows for our DATA (one stream a connection), as its frames say."""

    def __init__(self):
        self.changed = threading.Condition()
        self.connection = self.stream = self.initial = 65535
        self.closed = False

    def frame(self, kind, flags, stream_id, payload):
        with self.changed:
            if kind == 4 and not flags & 1:  # SETTINGS: SETTINGS_INITIAL_WINDOW_SIZE moves the stream's
                for at in range(0, len(payload) - 5, 6):
                    if int.from_bytes(payload[at : at + 2], "big") == 4:
                        value = int.from_bytes(payload[at + 2 : at + 6], "big")
                        self.stream, self.initial = self.stream + value - self.initial, value
            elif kind == 8:  # WINDOW_UPDATE
                increment = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
                if stream_id == 0:
                    self.connection += increment
                else:
                    self.stream += increment
            self.changed.notify_all()

    def take(self, n):
        """Waits until `n` bytes of DATA may go and counts them sent: False if the client left first."""
        with self.changed:
            self.changed.wait_for(lambda: self.closed or min(self.connection, self.stream) >= n)
            self.connection -= n
            self.stream -= n
            return not self.closed


def h2_frames(sock, buf, windows, headers=None):
    """Reads the client's frames (after its preface), passing each to `windows`; returns at the first
    HEADERS with its stream and the bytes after it when `headers` is None, else reads on until the
    client leaves."""
    while True:
        while len(buf) >= 9 and len(buf) >= 9 + int.from_bytes(buf[:3], "big"):
            length, kind, flags = int.from_bytes(buf[:3], "big"), buf[3], buf[4]
            stream_id = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
            windows.frame(kind, flags, stream_id, buf[9 : 9 + length])
            buf = buf[9 + length :]
            if kind == 1 and headers is None:
                return stream_id, buf
        data = sock.recv(65536)
        if not data:
            with windows.changed:
                windows.closed = True
                windows.changed.notify_all()
            return None, b""
        buf += data


def http2(sock, buf):
    windows = Windows()
    stream_id, buf = h2_frames(sock, buf[24:], windows)
    if stream_id is not None:
        answer_h2(sock, stream_id, buf, windows)


def answer_h2(sock, stream_id, buf, windows):
    sock.sendall(h2_frame(4, 0, 0, b"") + h2_frame(4, 1, 0, b""))  # our SETTINGS, and the ACK of theirs
    if MODE == "h2-continuation":
        first = h2_frame(1, 0, stream_id, b"\x88")  # :status 200, END_HEADERS not set
        value = b"v" * (16384 - len(h2_literal(b"x-pad", b"v" * 16370)) + 16370)
        field = h2_literal(b"x-pad", value)
        assert len(field) == 16384, len(field)
        frame = h2_frame(9, 0, stream_id, field)
        stream(sock, first, frame * 16)
    elif MODE == "h2-ping":
        stream(sock, b"", h2_frame(6, 0, 0, b"12345678") * 4096)
    elif MODE == "h2-body":
        reader = threading.Thread(target=quietly, args=(h2_frames, sock, buf, windows, True), daemon=True)
        reader.start()
        sock.sendall(h2_frame(1, 4, stream_id, b"\x88"))  # :status 200, END_HEADERS
        data, sent = h2_frame(0, 0, stream_id, b"x" * 16384), 0
        while sent < LIMIT and windows.take(16384):
            sock.sendall(data)
            sent += len(data)


def mqtt(sock, buf):
    """CONNACK for the CONNECT in `buf` (its protocol level says 3.1.1 or 5), then the endless PUBLISH;
    what the client sends meanwhile is read and dropped."""
    while len(buf) < 9:
        data = sock.recv(65536)
        if not data:
            return
        buf += data
    # Fixed header (1 byte + remaining length), protocol name (2 + 4 bytes "MQTT"), then its level.
    at = 1
    while buf[at] & 0x80:
        at += 1
    level = buf[at + 1 + 6]
    sock.sendall(b"\x20\x03\x00\x00\x00" if level == 5 else b"\x20\x02\x00\x00")
    threading.Thread(target=drain, args=(sock,), daemon=True).start()
    publish = b"\x30\xff\xff\xff\x7f" + b"\x00\x01t" + (b"\x00" if level == 5 else b"")  # 5: no properties
    stream(sock, publish, b"x" * CHUNK)


def quietly(function, *args):
    """`function(*args)`, in a thread of its own: a socket the connection's thread closed ends it."""
    with contextlib.suppress(OSError):
        function(*args)


def drain(sock):
    with contextlib.suppress(OSError):
        while sock.recv(65536):
            pass


def settled_open(limit_s=10.0):
    """open_conns once SETTLE_S has passed without a change (or after limit_s, as it is then)."""
    deadline = time.monotonic() + limit_s
    while True:
        with lock:
            if time.monotonic() - last_change >= SETTLE_S or time.monotonic() > deadline:
                return open_conns
        time.sleep(0.01)


def serve(sock):
    global open_conns, last_change
    with lock:
        open_conns += 1
        last_change = time.monotonic()
    try:
        with contextlib.suppress(OSError), sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if MODE.startswith("mqtt"):
                return mqtt(sock, b"")
            if MODE.startswith("h2"):
                buf = b""
                while len(buf) < 24:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buf += data
                return http2(sock, buf)
            return http1(sock)
    finally:
        if not getattr(connection, "asks", False):  # (an asker's left the count when it asked)
            with lock:
                open_conns -= 1
                last_change = time.monotonic()


def accept(listener):
    while True:
        sock, _ = listener.accept()
        threading.Thread(target=serve, args=(sock,), daemon=True).start()


def main(port):
    if MODE == "hops":
        for _ in range(20):
            extra = socket.socket()
            extra.bind(("127.0.0.1", 0))
            extra.listen(64)
            hop_ports.append(extra.getsockname()[1])
            threading.Thread(target=accept, args=(extra,), daemon=True).start()
    accept(listening(port, 256))  # says "ready"


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main(int(sys.argv[1]))
