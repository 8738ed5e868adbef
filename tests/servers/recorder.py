"""A catch-all HTTP/1.1 server that keeps what it received: usage `recorder.py PORT`.

Every request is answered and recorded (method, path, query, headers, body) except the server's own
`/__log` (GET: the records as JSON) and `/__reset` (POST: forget them). What it answers:

  /status/N        status N, a JSON body
  /login           200 {"token": "t0k3n"} and the cookie `session=s3ss10n`
  /redirect/PATH   302 to /PATH (/redirect301/, /redirect303/, /redirect307/: that status)
  /text            200 with a body that is not JSON
  /body/KIND       200 with one of BODIES: a charset to decode by, JSON that only json.loads reads
  /delay/MS        200 after MS milliseconds
  anything else    200 {"ok": true, "path": ..., "method": ...}

Threads (one per connection, keep-alive), so that a user's parallel requests are served in parallel:
the tests compare what squall and Locust send, not how fast."""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

# What /body/KIND answers: (Content-Type, body). Bodies whose text or JSON a client could read wrong:
# a declared charset, bytes that are not the charset's, and JSON that readers other than json.loads
# refuse or read otherwise (integers past 64 bits, NaN and Infinity, a lone surrogate).
BODIES = {
    "latin1": ("text/plain; charset=iso-8859-1", b"caf\xe9 cr\xe8me \xa0"),
    "badutf8": ("text/plain; charset=utf-8", b"ok \xff\xfe end \xe2\x82"),
    "json": ("application/json", '{"name": "caf\u00e9", "n": [1, 2.5, -0.0, 1e2], "ok": true}'.encode()),
    "bigint": ("application/json", b'{"n": 123456789012345678901234567890, "m": -9223372036854775809, "u": 2e0}'),
    "nan": ("application/json", b"[NaN, Infinity, -Infinity, 1E400]"),
    "surrogate": ("application/json", b'{"s": "\\ud800x", "e": "caf\\u00e9"}'),
    # a text type without a charset: requests (and Locust's FastResponse) read it as ISO-8859-1
    "nocharset": ("text/plain", "caf\u00e9 \u2013 cr\u00e8me".encode()),
    "quoted": ('text/html; charset="utf-8"', "caf\u00e9 \u2013 cr\u00e8me".encode()),
}

records: list[dict] = []
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _answer(self, status, body, extra=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if not isinstance(body, bytes) else "text/plain")
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _handle(self):
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if parts.path == "/__log":
            with lock:
                return self._answer(200, records)
        if parts.path == "/__reset":
            with lock:
                records.clear()
            return self._answer(200, {"reset": True})
        with lock:
            records.append(
                {
                    "t": time.time(),
                    "method": self.command,
                    "path": parts.path,
                    "query": parse_qsl(parts.query, keep_blank_values=True),
                    "headers": [[k.lower(), v] for k, v in self.headers.items()],
                    "body": body.decode("latin-1"),
                    "peer": self.client_address[1],  # the client's port: one per connection
                }
            )
        segments = parts.path.strip("/").split("/")
        if segments[0] == "status" and len(segments) > 1:
            return self._answer(int(segments[1]), {"status": int(segments[1])})
        if parts.path == "/login":
            return self._answer(200, {"token": "t0k3n"}, [("Set-Cookie", "session=s3ss10n; Path=/")])
        if segments[0] in ("redirect", "redirect301", "redirect303", "redirect307"):
            status = int(segments[0][8:] or 302)
            return self._answer(status, {}, [("Location", "/" + "/".join(segments[1:]))])
        if parts.path == "/text":
            return self._answer(200, b"plain text, not JSON")
        if segments[0] == "body" and len(segments) > 1 and segments[1] in BODIES:
            ctype, data = BODIES[segments[1]]
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            return self.wfile.write(data)
        if segments[0] == "delay" and len(segments) > 1:
            time.sleep(int(segments[1]) / 1000)
        return self._answer(200, {"ok": True, "path": parts.path, "method": self.command})

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle


def main(port):
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(int(sys.argv[1]))
