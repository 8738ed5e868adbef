"""Fuzzing the dashboard's HTTP API (issue 26): generated and mutated requests (methods, targets, versions,
headers, control bodies), each on its own connection, against the real dashboard of a real `squall -f` run
waiting for its Start. Each must get a well-formed HTTP answer (http.client reads it) with a status the
docs/dashboard.md documents, never a traceback on the run's stderr; only a request the server took (200 to a start)
starts a test, which the run's own counter and the target's log (nginx) say; the server stays responsive
throughout. Seeded, so a failure replays; `make fuzz` sends many more (SQUALL_FUZZ_N / 10 requests)."""

import http.client
import io
import json
import os
import random
import re
import resource
import signal
import socket
from urllib.parse import urlsplit

import pytest

from support import free_port, squall_process, wait_for_port, wait_until
from test_web import FILES
from web_client import control, live, token

pytestmark = pytest.mark.slow

N = int(os.environ.get("SQUALL_FUZZ_N", "4000")) // 10
# What the dashboard answers (docs/dashboard.md: the dashboard's safety): 200, its own refusals, http.server's for a
# malformed request (400, 414 a request line over 64 KiB, 431 a header line over it or over 100 headers,
# 501 an unknown method, 505 HTTP/2 and up).
STATUSES = {200, 400, 401, 403, 404, 411, 413, 414, 415, 431, 501, 505}
PATHS = [
    "/", "/index.html", "/assets/app.js", "/assets/app.css", "/api/live", "/api/live?cursor=3", "/api/result",
    "/api/logs", "/api/tasks", "/metrics", "/download/result.json", "/download/stats.csv",
    "/download/failures.csv", "/download/exceptions.csv", "/download/report.html", "/api/start", "/api/start",
    "/api/start", "/api/users", "/api/stop", "/api/reset", "/api/", "/api", "/api/start/", "//api/start",
    "/api/start?users=1", "/api/../api/start", "/%2e%2e/", "/api/live?cursor=-5", "/api/live?cursor=1e999",
    "/api/live?cursor=" + "9" * 5000, "/api/live?cursor=%ff%fe", "*", "http://evil.test/api/live",
    "http://127.0.0.1:PORT/api/start", "http://[::1/", "/\x00", "/\u00e9", "/" + "a" * 3000, "?", "",
]  # fmt: skip
METHODS = ["GET", "GET", "GET", "POST", "POST", "POST", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "get", "PO ST",
           "", "\xff", "TRACE"]  # fmt: skip
VERSIONS = ["HTTP/1.1"] * 6 + ["HTTP/1.0", "HTTP/2.0", "HTTP/0.9", "HTTP/1.1.1", "HTTP/x", "", "HTTP/1.10000000000"]
# Users: valid (at most 2) or refused; TOO_MANY, beyond the open-file limit, refused as `-u` is.
HARD = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
TOO_MANY = [] if HARD == resource.RLIM_INFINITY or HARD > 1 << 30 else [str(HARD), str(HARD * 1000)]
USERS = ['1', '2', '0', '-1', '1e999', '-1e999', 'NaN', 'Infinity', '"2"', '"x"', *TOO_MANY, '1.5',
         '2.0', 'true', 'null', '[]', '{}', '"1e3"', '""', '" 2 "', '"\\u0661"', '9' * 400]  # fmt: skip
RATES = ['1', '5', '0', '-1', '0.0001', 'NaN', 'Infinity', '-Infinity', '1e999', '1e-999', '"2"', 'null',
         'true', '[1]', '"nan"', '1e308']  # fmt: skip
HOSTS = ["NGINX", "NGINX", "http://127.0.0.1:1", "", "ftp://x", "http://[::1", "http://x y", "mqtt://broker",
         "http://:80", "javascript:alert(1)", "http://a:99999", "http://127.0.0.1:1\r\nX: y"]  # fmt: skip
SAFE_HOSTS = {"", "http://127.0.0.1:1"}  # with nginx's: the hosts a start may get (no others: see mutate)


def body(rnd, nginx_url):
    """A control's body: mostly objects of users, spawn_rate and host drawn from the lists above, sometimes
    something else (a list, nested arrays, not JSON, not UTF-8)."""
    roll = rnd.random()
    if roll < 0.3:  # what the page sends: a start or an Edit the server takes, if the rest of the request is right
        host = rnd.choice([nginx_url, ""])
        return json.dumps({"users": rnd.randint(1, 2), "spawn_rate": rnd.choice([1, 5, 0.5]), "host": host}).encode()
    if roll < 0.8:
        fields = []
        for key, values in (("users", USERS), ("spawn_rate", RATES)):
            if rnd.random() < 0.9:
                fields.append(f'"{key}": {rnd.choice(values)}')
        if rnd.random() < 0.6:
            fields.append('"host": ' + json.dumps(rnd.choice(HOSTS).replace("NGINX", nginx_url)))
        if rnd.random() < 0.1:
            fields.append('"users": 1')  # a repeated key
        rnd.shuffle(fields)
        return ("{" + ", ".join(fields) + "}").encode()
    return rnd.choice(
        [b"", b"{}", b"[]", b"null", b"1", b'"x"', b"{", b"[" * 100_000, b"\xff\xfe{}", b'{"users": 1} x',
         "{\"users\": \"\u00e9\"}".encode("utf-16"), b"users=1&spawn_rate=1", b"\x00" * 10]
    )  # fmt: skip


def loads(raw):
    """As the server reads a control's body: numbers as their text."""
    return json.loads(raw, parse_int=str, parse_float=str, parse_constant=str)


def mutate(rnd, raw, nginx_url):
    """Bytes flipped, dropped or repeated; kept only if the result could not start more than a small,
    short test against a known target (a host of these, at most 5 users)."""
    data = bytearray(raw)
    for _ in range(rnd.randint(1, 4)):
        if not data:
            break
        i = rnd.randrange(len(data))
        op = rnd.random()
        if op < 0.4:
            data[i] = rnd.randrange(256)
        elif op < 0.7:
            del data[i]
        else:
            data[i:i] = data[i : i + rnd.randint(1, 8)]
    try:
        doc = loads(bytes(data))
    except (ValueError, RecursionError):
        return bytes(data)
    if isinstance(doc, dict):
        host, users = doc.get("host", ""), doc.get("users")
        if host not in SAFE_HOSTS | {nginx_url} or (re.fullmatch(r"\s*\d+\s*", str(users)) and int(users) > 5):
            return raw
    return bytes(data)


GETS = PATHS[:15]
CONTROLS = ["/api/start", "/api/start", "/api/start", "/api/users", "/api/users", "/api/stop", "/api/reset"]


def _header(state, name, value):
    """Sets (value), drops (None) or adds (a list of values) a header."""
    state["headers"] = [(k, v) for k, v in state["headers"] if k.lower() != name.lower()]
    for v in [] if value is None else value if isinstance(value, list) else [value]:
        state["headers"].append((name, v))


def _length(rnd, state):
    n = len(state["data"])
    state["length"] = rnd.choice(
        [[], [str(max(0, n - 3))], [str(n + 5)], ["-1"], ["x"], ["1e3"], [str(n), "1"], ["99999999999999999999"],
         [" " + str(n)], ["+" + str(n)], "chunked"]
    )  # fmt: skip


# Faults, each changing one part of the page's own request.
# fmt: off
FAULTS = [
    lambda rnd, st: st.update(method=rnd.choice(METHODS)),
    lambda rnd, st: st.update(target=rnd.choice(PATHS)),
    lambda rnd, st: st.update(version=rnd.choice(VERSIONS)),
    lambda rnd, st: _header(st, "Host", rnd.choice(
        ["evil.test", "evil.test:1", "", None, "[::1]", "127.0.0.1:1:2", "localhost.", ["127.0.0.1", "evil.test"],
         "127.0.0.1\x00", "[::1", "0x7f.1", "LOCALHOST"])),
    lambda rnd, st: _header(st, "Origin", rnd.choice(
        [None, "http://localhost:1", "null", "http://evil.test", "x", ["http://evil.test", "http://evil.test"]])),
    lambda rnd, st: _header(st, "Sec-Fetch-Site", rnd.choice([None, "same-site", "cross-site", "none", "x"])),
    lambda rnd, st: _header(st, "Sec-Fetch-Mode", rnd.choice(["cors", "no-cors", "navigate"])),
    lambda rnd, st: _header(st, "Content-Type", rnd.choice(
        [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
         "APPLICATION/JSON", "application/json; charset=utf-8", "application/jsonx", ""])),
    lambda rnd, st: _header(st, "X-Squall-Token", rnd.choice(
        [None, "x", "", st["secret"] + "x", st["secret"].upper(), "\xe9" * 30])),
    lambda rnd, st: _header(st, "Authorization", rnd.choice(["Basic Zm9vOmJhcg==", "Basic", "Bearer x", "\xe9"])),
    lambda rnd, st: _header(st, "Expect", "100-continue"),
    lambda rnd, st: _header(st, "Connection", rnd.choice(["close", "keep-alive", "upgrade"])),
    lambda rnd, st: _header(st, "X-Long", "y" * rnd.choice([100, 70_000])),
    lambda rnd, st: st["headers"].extend(("X-Many", str(i)) for i in range(120)),
    lambda rnd, st: st["headers"].append(("no colon here", None)),
    lambda rnd, st: st.update(line="GET /" + "x" * 66_000 + " HTTP/1.1"),  # over http.server's 64 KiB line
    _length,
    lambda rnd, st: st.update(data=body(rnd, st["nginx"])),
    lambda rnd, st: st.update(data=mutate(rnd, st["data"], st["nginx"])),
    lambda rnd, st: st.update(data=mutate(rnd, st["data"], st["nginx"])),
]
# fmt: on


def request(rnd, port, secret, nginx_url):
    """(the request's bytes, its method, its target): the page's own request (a GET, or a control's POST
    with its JSON body, same-origin headers and the token), then 0 to 3 FAULTS."""
    host = rnd.choice([f"127.0.0.1:{port}", f"localhost:{port}"])
    st = {"secret": secret, "nginx": nginx_url, "version": "HTTP/1.1", "length": None, "line": None}
    if rnd.random() < 0.35:
        st.update(method="GET", target=rnd.choice(GETS), data=b"", headers=[("Host", host)])
    else:
        st.update(method="POST", target=rnd.choice(CONTROLS), data=body(rnd, nginx_url))
        st["headers"] = [("Host", host), ("Origin", f"http://{host}"), ("Sec-Fetch-Site", "same-origin"),
                         ("Content-Type", "application/json"), ("X-Squall-Token", secret)]  # fmt: skip
    for fault in rnd.choices(FAULTS, k=rnd.choice([0, 0, 1, 1, 1, 2, 3])):
        fault(rnd, st)
    method, target = st["method"], st["target"].replace("PORT", str(port))
    line = st["line"] or " ".join(x for x in (method, target, st["version"]) if x)
    lengths = [str(len(st["data"]))] if st["length"] is None else st["length"]
    if lengths == "chunked":
        st["headers"].append(("Transfer-Encoding", "chunked"))
    elif st["data"] or method == "POST":
        st["headers"].extend(("Content-Length", v) for v in lengths)
    head = line + "\r\n" + "".join(f"{k}\r\n" if v is None else f"{k}: {v}\r\n" for k, v in st["headers"])
    return head.encode("latin-1", "replace") + b"\r\n" + st["data"], method, target


def send(port, raw, method):
    """Sends `raw` on a new connection and half-closes it; (status or None, whether sending failed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
        failed = False
        try:
            s.sendall(raw)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            failed = True  # the server answered and closed before reading it all (an oversize request)
        got = b""
        try:
            while chunk := s.recv(65536):
                got += chunk
        except ConnectionResetError:
            pass
    if not got:
        return None, failed
    resp = http.client.HTTPResponse(_Socket(got), method=method if method in ("HEAD", "GET", "POST") else "GET")
    resp.begin()  # raises on anything but a well-formed status line and headers (1xx skipped)
    text = resp.read()
    assert resp.status in STATUSES, (resp.status, got[:300])
    if resp.status != 200:  # a refusal says why in one line (JSON, or text ending in a newline)
        assert text.rstrip(b"\n").count(b"\n") == 0 and (text or method == "HEAD" or resp.status == 401), got[:500]
    return resp.status, failed


class _Socket:
    def __init__(self, data):
        self.data = data

    def makefile(self, *_args, **_kw):
        return io.BytesIO(self.data)


def action_of(target):
    """The control a target names, as the server reads it (http.server's `//` collapsed, then the path)."""
    path = "/" + target.lstrip("/") if target.startswith("//") else target
    try:
        return urlsplit(path).path.removeprefix("/api/")
    except ValueError:
        return None


def test_the_dashboards_http_api_under_generated_and_mutated_requests(nginx, tmp_path):
    nginx.reset_log()
    port, err = free_port(), tmp_path / "stderr"
    with err.open("w") as stderr:
        # Each test a start may begin lasts 2 s (-t), of at most 5 users at 20 requests a second.
        proc = squall_process(
            "-f", FILES / "dashboard.py", "-H", nginx.url, "--web-port", port, "--only-summary", "-t", "2s",
            stderr=stderr,
        )  # fmt: skip
    rnd = random.Random(26)
    taken = 0
    seen = {}
    try:
        wait_for_port(port)
        secret = token(port)
        assert secret and len(secret) >= 24
        # A first test, so that a Stop the fuzz sends is a test's (before the first one it ends the run).
        assert control(port, "start", {"users": 1, "spawn_rate": 10}) == (200, {"ok": True})
        wait_until(lambda: live(port)["test"] == 1 and live(port)["startable"], "the first test's end", proc)
        nginx.reset_log()
        for i in range(N):
            raw, method, target = request(rnd, port, secret, nginx.url)
            try:
                status, failed = send(port, raw, method)
            except Exception as e:
                said = [line for line in err.read_text().splitlines() if "could not answer" in line]
                raise AssertionError(f"request {i}: {raw[:500]!r}; squall said {said[-3:]}") from e
            if status is None:  # no answer: only to a request with no request line, or one that was too long
                assert failed or not raw.split(b"\r\n", 1)[0].strip() or len(raw) > 65536, raw[:300]
            seen[status] = seen.get(status, 0) + 1
            if status == 200 and method == "POST" and action_of(target) == "start":
                taken += 1
            if i % 50 == 0:  # responsive throughout
                assert live(port)["state"] in ("ready", "spawning", "running", "stopping", "stopped")
            assert proc.poll() is None, err.read_text()[-3000:]
        # The tests started are the starts the server took, no more (a refused one started nothing).
        wait_until(lambda: live(port)["startable"] or live(port)["state"] == "ready", "the last test's end", proc)
        assert live(port)["test"] == 1 + taken, (taken, seen)
        if taken == 0:
            assert nginx.requests_logged() == 0
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = err.read_text()
    assert "Traceback" not in text and "could not answer" not in text, text[-3000:]
    print(f"answers {dict(sorted(seen.items(), key=str))}, starts taken {taken}")
    assert seen.get(200, 0) > N // 10 and len(seen) >= 6, seen  # the generator reaches most answers
